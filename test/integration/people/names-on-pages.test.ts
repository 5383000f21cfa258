import { WebClient } from "@slack/web-api";
import { eq } from "drizzle-orm";
import type { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadVerifyingKeys } from "../../../src/grant/keys.ts";
import { executePlan } from "../../../src/executor/execute-plan.ts";
import { createApp } from "../../../src/server/app.ts";
import type { ServiceContext } from "../../../src/service/context.ts";
import { decide } from "../../../src/service/decide/decide.ts";
import { claimApproved } from "../../../src/service/execution/claim-approved.ts";
import { reportOutcome } from "../../../src/service/execution/report-outcome.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import type { PlanView } from "../../../src/service/lifecycle/plan-view.ts";
import { NAME_REFRESH_MS, NAME_RETRY_MS, refreshNames } from "../../../src/service/people/index.ts";
import { consumeLoginLink, createLoginLink } from "../../../src/service/sign-in/login-links.ts";
import { slackPeople } from "../../../src/slack/people.ts";
import type { Database } from "../../../src/store/db.ts";
import { people } from "../../../src/store/schema.ts";
import { databaseKinds } from "../../support/databases.ts";
import { executionPorts } from "../../support/execution-ports.ts";
import { mergeRequest, targetConfig, testGrantKeys, WRITE_TOKEN } from "../../support/harness.ts";
import { SlackEmulator } from "../../support/slack-emulator.ts";
import { useHarness } from "../../support/use-harness.ts";

/** A display name written to break out of the page, with a bidi override to reorder what follows it. */
const HOSTILE = `<img src=x onerror="alert(1)"> Ana & \u202Eco`;
const HOSTILE_ESCAPED = "&lt;img src=x onerror=&quot;alert(1)&quot;&gt; Ana &amp; ⟨U+202E⟩co";

/**
 * The browser names people by their Slack display names, read in one query per page and fetched
 * by the background refresh (never while a page waits); pages show ids while Slack cannot answer.
 * Also the phone markup: labelled list rows, outcome rows from 1, the decision bar.
 */
describe.each(databaseKinds)("people named on the browser's pages, on $name", (kind) => {
  const h = useHarness(kind, { defaults: { requiredApprovals: 2 } });
  const slack = new SlackEmulator({
    users: {
      U0ALICE: { name: HOSTILE },
      U0BOB: { name: "Sam" },
      U0CAROL: { name: "sam" },
      U0REQUESTER: { name: "Rita Requester" },
    },
  });
  let ctx: ServiceContext;
  let app: Hono;
  let seq = 0;
  /** Reads of the people table, counted where a query names the table it reads. */
  let peopleReads = 0;

  beforeAll(async () => {
    await slack.start();
    const client = new WebClient(slack.botToken, { slackApiUrl: slack.url, retryConfig: { retries: 0 } });
    ctx = { ...h.ctx, database: countingPeopleReads(h.database, () => peopleReads++), people: slackPeople(client) };
    app = createApp(ctx);
  });
  afterAll(async () => {
    await slack.stop();
  });

  const propose = async (overrides: Record<string, unknown> = {}): Promise<PlanView> =>
    (await submitPlan(ctx, { agent: h.agent, request: mergeRequest({ title: `Named plan ${++seq}`, ...overrides }) })).plan;
  const approveAs = (plan: PlanView, userId: string) => decide(ctx, { planId: plan.id, hash: plan.hash, actor: { userId, via: "web" }, verdict: "approve" });
  /** A session cookie for `userId`, through a one-time link as a person signs in. */
  const signIn = async (userId: string) => {
    const { url } = await createLoginLink(ctx, { userId, via: "cli" });
    const { sessionId } = await consumeLoginLink(ctx, { token: url.split("/login/")[1]! });
    return `cs_session=${sessionId}`;
  };
  const page = async (path: string, cookie: string) => {
    const res = await app.request(path, { headers: { cookie } });
    expect(res.status, path).toBe(200);
    return res.text();
  };
  const asked = () => slack.callsTo("users.info").map((c) => String(c.body.user));

  it("a page shows ids and asks Slack nothing; the refresh names them; then names, escaped, with the id where two share a name and in the timeline", async () => {
    const plan = await propose();
    await approveAs(plan, "U0BOB");
    const alice = await signIn("U0ALICE");

    const before = await page(`/plans/${plan.id}`, alice);
    expect(asked()).toEqual([]);
    expect(before).toContain('<code class="who-name">U0ALICE</code>');
    expect(before).toContain('<dd><code class="person-id">U0REQUESTER</code></dd>');
    expect(before).toContain('Approved by <code class="person-id">U0BOB</code> via web');

    expect(await refreshNames(ctx)).toBe(4);
    expect(asked().sort()).toEqual(["U0ALICE", "U0BOB", "U0CAROL", "U0REQUESTER"]);

    peopleReads = 0;
    const after = await page(`/plans/${plan.id}`, alice);
    expect(peopleReads, "one read of the people table for the whole page").toBe(1);
    // The header names the reader once; the id is only its tooltip.
    expect(after).toContain(`<strong class="who-name" title="U0ALICE">${HOSTILE_ESCAPED}</strong>`);
    expect(after).not.toContain("<code>U0ALICE</code>");
    expect(after).not.toContain("<img");
    expect(after).toContain('<dd><span class="person" title="U0REQUESTER">Rita Requester</span></dd>');
    // Bob and Carol are "Sam" and "sam": each shown with the id that tells them apart.
    expect(after).toContain(
      `May approve: <span class="person" title="U0ALICE">${HOSTILE_ESCAPED}</span>, <span class="person">Sam <code class="person-id">U0BOB</code></span>, <span class="person">sam <code class="person-id">U0CAROL</code></span>`,
    );
    expect(after).toContain('Approved by <span class="person">Sam <code class="person-id">U0BOB</code></span> via web');
    // The timeline always carries the id, whatever the name.
    expect(after).toMatch(
      /<strong>decision\.approve<\/strong> <span class="muted">by <span class="person">Sam <code class="person-id">U0BOB<\/code><\/span> via web/,
    );

    // Asked once a day at most, however often pages are read.
    await page(`/plans/${plan.id}`, alice);
    expect(await refreshNames(ctx)).toBe(0);
    h.clock.advance(NAME_REFRESH_MS / 1000 - 60);
    await page(`/plans/${plan.id}`, await signIn("U0ALICE"));
    expect(await refreshNames(ctx)).toBe(0);
    h.clock.advance(120);
    await page(`/plans/${plan.id}`, await signIn("U0ALICE"));
    expect(await refreshNames(ctx)).toBe(4);
    expect(asked()).toHaveLength(8);
  });

  it("Slack refusing users.info (missing_scope) leaves the id on the page, and the person is not asked about again within the day", async () => {
    const plan = await propose({ onBehalfOf: "U0NOSCOPE" });
    const alice = await signIn("U0ALICE");
    slack.failNext("users.info", { error: "missing_scope", count: 100 });
    try {
      await page(`/plans/${plan.id}`, alice);
      expect(await refreshNames(ctx)).toBe(1);
      expect(slack.callsTo("users.info").at(-1)?.answer?.body).toMatchObject({ ok: false, error: "missing_scope" });
      expect(await page(`/plans/${plan.id}`, alice)).toContain('<dd><code class="person-id">U0NOSCOPE</code></dd>');
    } finally {
      slack.clearFaults();
    }
    h.clock.advance(NAME_RETRY_MS / 1000 + 60);
    await page(`/plans/${plan.id}`, await signIn("U0ALICE"));
    expect(await refreshNames(ctx)).toBe(0);
    const [row] = await h.database.db.select().from(people).where(eq(people.userId, "U0NOSCOPE"));
    expect(row).toMatchObject({ displayName: null, fetchedAt: null });
  });

  it("a failure that may pass (Slack answering 500) is asked about again an hour later, and then the name shows", async () => {
    const plan = await propose({ onBehalfOf: "U0FLAKY" });
    const alice = await signIn("U0ALICE");
    slack.failNext("users.info", { status: 500 });
    await page(`/plans/${plan.id}`, alice);
    expect(await refreshNames(ctx)).toBe(1);
    expect(await page(`/plans/${plan.id}`, alice)).toContain('<dd><code class="person-id">U0FLAKY</code></dd>');
    expect(await refreshNames(ctx)).toBe(0);
    h.clock.advance(NAME_RETRY_MS / 1000 + 1);
    const again = await signIn("U0ALICE");
    await page(`/plans/${plan.id}`, again);
    expect(await refreshNames(ctx)).toBe(1);
    expect(await page(`/plans/${plan.id}`, again)).toContain('<dd><span class="person" title="U0FLAKY">u0flaky</span></dd>');
  });

  it("phone markup: the decision bar only for who may decide, labelled list rows, outcome rows numbered from 1 with their status kept whole", async () => {
    const plan = await propose({
      actions: [
        { kind: "http.json", target: "crm", path: "/contacts/1", op: "merge", body: { email: "ana@bar.example", tier: "gold" } },
        { kind: "http.json", target: "crm", path: "/contacts/2", op: "merge", body: { email: "bruno@bar.example" } },
      ],
    });
    const alice = await signIn("U0ALICE");
    const pending = await page(`/plans/${plan.id}`, alice);
    const bar = /<section class="decision-bar"[\s\S]*?<\/section>/.exec(pending)?.[0] ?? "";
    expect(bar).toContain('<a href="#changes" class="change-count">3 changes in 2 actions</a>');
    expect(bar).toMatch(/<form method="post" action="\/plans\/[^/]+\/approve" class="inline">[\s\S]*<button type="submit" class="approve">Approve<\/button>/);
    expect(bar).toContain('<button type="submit" form="reject-form" class="reject">Reject</button>');
    expect(pending).toMatch(/<form id="reject-form" method="post" action="\/plans\/[^/]+\/reject"[\s\S]*?<textarea id="reason" name="reason" required/);
    // The bar comes after the diff in the page.
    expect(pending.indexOf('id="changes"')).toBeLessThan(pending.indexOf('class="decision-bar"'));

    const list = await page("/plans?status=pending", alice);
    const row = new RegExp(`<tr><td><a href="/plans/${plan.id}">[\\s\\S]*?</tr>`).exec(list)?.[0] ?? "";
    expect(row).toContain('<td data-label="Status">');
    expect(row).toContain('<td data-label="Agent">');
    expect(row).toContain('<td data-label="Target">crm</td>');
    expect(row).toMatch(/<td data-label="Time left"><span data-expires="[^"]+">…<\/span><\/td>/);
    expect(row).toMatch(/<td class="hash" data-label="Hash">[0-9a-f]{12}<\/td>/);

    await approveAs(plan, "U0BOB");
    await approveAs(plan, "U0CAROL");
    let claim = (await claimApproved(ctx))!;
    while (claim.plan.id !== plan.id) claim = (await claimApproved(ctx))!;
    const write = targetConfig(h.target.url, { write: { headers: { Authorization: `Bearer ${WRITE_TOKEN}` } } });
    const outcome = await executePlan(claim, executionPorts(await loadVerifyingKeys((await testGrantKeys()).publicPem), { crm: write }, h.clock.now));
    expect(await reportOutcome(ctx, { claimToken: claim.claimToken, outcome })).toEqual({ status: "applied" });

    const applied = await page(`/plans/${plan.id}`, alice);
    expect(applied).not.toContain('class="decision-bar"');
    expect([...applied.matchAll(/<td class="n" data-label="#">(\d+)<\/td>/g)].map((m) => m[1])).toEqual(["1", "2"]);
    // "applied · verified" is held on one line.
    expect(applied).toContain(
      '<span class="nowrap"><span class="badge s-applied">applied</span><span class="muted verified" data-verified="true">\u00a0·\u00a0verified</span></span>',
    );
  });
});

/** The database, with `counted` called for each `select(…).from(people)`: the one way names-of.ts reads names. */
function countingPeopleReads(database: Database, counted: () => void): Database {
  const db = new Proxy(database.db, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (prop !== "select" || typeof value !== "function") return value;
      return (...args: unknown[]) => {
        const builder = (value as (...a: unknown[]) => { from(table: unknown): unknown }).apply(target, args);
        const from = builder.from.bind(builder);
        builder.from = (table: unknown) => {
          if (table === people) counted();
          return from(table);
        };
        return builder;
      };
    },
  });
  return { ...database, db } as Database;
}
