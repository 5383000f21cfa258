import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JsonResourceServer } from "../../src/demo/json-resource-server.ts";
import { runServer, type RunningServer } from "../../src/server/run-server.ts";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import type { AgentIdentity } from "../../src/service/agents/authenticate-agent.ts";
import { decide } from "../../src/service/decide/decide.ts";
import type { PlanView } from "../../src/service/lifecycle/plan-view.ts";
import { submitPlan } from "../../src/service/intake/submit-plan.ts";
import type { Database } from "../../src/store/db.ts";
import { pglite } from "../support/databases.ts";
import { READ_TOKEN, silentLogger, targetConfig, testConfig, testGrantKeys, WRITE_TOKEN } from "../support/harness.ts";
import { SlackEmulator, type SlackMessage } from "../support/slack-emulator.ts";
import { waitFor } from "../support/wait-for.ts";

const CHANNEL = "C0REVIEW";
/** Short on purpose: 40 previews one a second would take 40 s; a digest shows them all within this. */
const AFTER_SECONDS = 5;
/** Room for a loaded 2-core machine (PGlite, the server and the test in one process). */
const MARGIN_MS = 12_000;

/**
 * Digests over real HTTP: the server's outbox posts to the Slack emulator, which enforces Slack's
 * per-channel limit (1 post a second, a burst of 3, 429 with Retry-After beyond it). A burst of
 * plans to one channel is shown within afterSeconds: high-risk plans by their own preview, the
 * rest as lines of digest messages, whose threads and lines follow each plan's lifecycle.
 */
describe("Slack digests on PGlite over HTTP, with Slack's per-channel rate limit", () => {
  const s = {} as { database: Database; target: JsonResourceServer; slack: SlackEmulator; server: RunningServer; agent: AgentIdentity };

  beforeAll(async () => {
    s.database = await pglite.open();
    s.target = new JsonResourceServer({
      seed: Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`/contacts/${i}`, { id: i, email: `c${i}@old.example` }])),
      readTokens: [READ_TOKEN],
      writeToken: WRITE_TOKEN,
    });
    await s.target.start();
    s.slack = new SlackEmulator({ teamId: "T0TEST", channelRateLimit: true });
    await s.slack.start();
    const config = {
      ...testConfig({ crm: targetConfig(s.target.url, { policy: { riskByOp: { delete: "high" } } }) }),
      slack: {
        enabled: true as const,
        botToken: s.slack.botToken,
        signingSecret: "slack-signing-secret-for-digests",
        appToken: undefined,
        apiUrl: s.slack.url,
        reviewChannel: CHANNEL,
        digest: { afterSeconds: AFTER_SECONDS },
      },
    };
    s.server = await runServer({
      config,
      logger: silentLogger,
      database: s.database,
      grantKey: (await testGrantKeys()).signing,
      sweepMs: 3_600_000,
      remindMs: 3_600_000,
      deliverMs: 50,
    });
    s.agent = await addAgent(s.server.ctx, { name: "burst-agent" });
  });

  const submitted: PlanView[] = [];

  afterAll(async () => {
    await s.server?.close();
    await s.slack?.stop();
    await s.target?.stop();
    await s.database?.close();
  });

  const submit = (n: number, op: "merge" | "delete"): Promise<PlanView> =>
    submitPlan(s.server.ctx, {
      agent: s.agent,
      request: {
        title: `Contact ${n} <!channel> *now*`,
        actions: [{ kind: "http.json", target: "crm", path: `/contacts/${n}`, op, ...(op === "merge" ? { body: { email: `c${n}@new.example` } } : {}) }],
      },
    }).then((r) => r.plan);

  const isDigest = (m: SlackMessage) => (m.text ?? "").includes("plans posted together");
  const shows = (m: SlackMessage, plan: PlanView) =>
    JSON.stringify(m.blocks ?? []).includes(`/plans/${plan.id}|`) || JSON.stringify(m.blocks ?? []).includes(`"${plan.reviewUrl}"`);
  /** When each plan first became visible in the channel: the post (its preview or a digest) that showed it. */
  const firstShown = (plan: PlanView): Date | undefined =>
    s.slack.calls.find(
      (c) =>
        c.method === "chat.postMessage" &&
        c.body.channel === CHANNEL &&
        c.body.thread_ts === undefined &&
        c.answer?.body?.ok === true &&
        c.raw.includes(plan.id),
    )?.at;

  it("40 plans at once: all visible within afterSeconds (digests), high-risk ones by their own preview, Slack's limit respected", async () => {
    const kinds = Array.from({ length: 40 }, (_, i) => (i % 10 === 3 ? "delete" : "merge") as "merge" | "delete");
    const submittedAt = new Map<string, number>();
    // As fast as the machine takes them, four at a time (forty at once time out their target reads here).
    const plans: PlanView[] = new Array(kinds.length);
    let next = 0;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        for (let i = next++; i < kinds.length; i = next++) {
          const plan = await submit(i, kinds[i]!);
          submittedAt.set(plan.id, Date.now());
          plans[i] = plan;
        }
      }),
    );
    submitted.push(...plans);
    const highRisk = plans.filter((_, i) => kinds[i] === "delete");
    expect(highRisk).toHaveLength(4);

    await waitFor("every plan to be visible in the channel", () => plans.every((p) => firstShown(p) !== undefined), 120_000);
    const late = plans
      .map((p) => ({ title: p.plan.title, ms: firstShown(p)!.getTime() - submittedAt.get(p.id)! }))
      .filter((d) => d.ms > AFTER_SECONDS * 1000 + MARGIN_MS);
    expect(late).toEqual([]);

    const top = s.slack.messagesIn(CHANNEL);
    const digests = top.filter(isDigest);
    expect(digests.length).toBeGreaterThanOrEqual(1);
    // Far fewer posts than plans: that is what made them visible in time.
    expect(top.length).toBeLessThan(plans.length / 2);
    for (const plan of highRisk) {
      const own = top.filter((m) => !isDigest(m) && shows(m, plan));
      expect(own, `high-risk ${plan.plan.title} has its own preview`).toHaveLength(1);
      expect(digests.some((d) => shows(d, plan))).toBe(false);
    }
    // Every other plan is shown exactly once: in a digest or by its own preview, never both.
    for (const plan of plans)
      expect(
        top.filter((m) => shows(m, plan)),
        plan.plan.title,
      ).toHaveLength(1);
    // Plan-supplied text is shown literally.
    for (const d of digests) expect(JSON.stringify(d.blocks)).not.toContain("<!channel>");
    // The product paced itself: Slack never saw a post sent too early after a 429.
    expect(s.slack.rateLimited.early).toBe(0);
  });

  it("a digested plan's approval replies in the digest's thread and updates its line, the other lines kept", async () => {
    const top = s.slack.messagesIn(CHANNEL);
    const digest = top.find(isDigest)!;
    const listed = (JSON.stringify(digest.blocks).match(/\/plans\/[0-9a-f-]{36}\|open/g) ?? []).map((m) => m.slice(7, 43));
    expect(listed.length).toBeGreaterThanOrEqual(2);
    const [planId] = listed;
    const plan = submitted.find((p) => p.id === planId)!;
    expect(plan).toBeDefined();

    // Approved where the digest's line leads: the plan page (the web door).
    await decide(s.server.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" });

    const current = () => s.slack.messagesIn(CHANNEL).find((m) => m.ts === digest.ts)!;
    const reply = await waitFor("the approval in the digest's thread", () =>
      current().replies.find((r) => JSON.stringify(r.blocks ?? []).includes(`/plans/${planId}|open`)),
    );
    expect(JSON.stringify(reply.blocks)).toContain("U0ALICE");
    await waitFor("the digest's line to show the plan approved", () => {
      const text = JSON.stringify(current().blocks);
      const line = text.split("\\n").find((l) => l.includes(`/plans/${planId}|open`));
      return line?.includes("✅ approved");
    });
    const after = JSON.stringify(current().blocks);
    for (const other of listed) expect(after).toContain(`/plans/${other}|open`);
    expect(current().history.length).toBeGreaterThanOrEqual(1);
    // No other plan got a post of its own for this: the digest was updated, not replaced.
    expect(s.slack.messagesIn(CHANNEL).length).toBe(top.length);
  });
});
