import { and, eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { executePlan } from "../../../src/executor/execute-plan.ts";
import { loadVerifyingKeys } from "../../../src/grant/keys.ts";
import { fingerprint, shortHash } from "../../../src/plan/fingerprint.ts";
import { decide } from "../../../src/service/decide/decide.ts";
import { editForm, editPlan } from "../../../src/service/edit/index.ts";
import { claimApproved } from "../../../src/service/execution/claim-approved.ts";
import { reportOutcome } from "../../../src/service/execution/report-outcome.ts";
import { getPlan } from "../../../src/service/intake/get-plan.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import type { PlanView } from "../../../src/service/lifecycle/plan-view.ts";
import { transition } from "../../../src/service/lifecycle/transition.ts";
import type { ServiceContext } from "../../../src/service/context.ts";
import { slackViewOf } from "../../../src/service/delivery/slack-messages.ts";
import type { PlanEvent } from "../../../src/service/records/outbox.ts";
import { threadEventOf } from "../../../src/slack/deliver.ts";
import { renderThreadReply } from "../../../src/slack/render.ts";
import { webhookSink } from "../../../src/webhooks/webhook-sink.ts";
import { auditEvents, outbox, plans } from "../../../src/store/schema.ts";
import { databaseKinds } from "../../support/databases.ts";
import { executionPorts } from "../../support/execution-ports.ts";
import { mergeRequest, targetConfig, testGrantKeys, WRITE_TOKEN } from "../../support/harness.ts";
import { refusal } from "../../support/refusal.ts";
import { useHarness, type HarnessView } from "../../support/use-harness.ts";

let seq = 0;
/** A plan over a contact of its own, seeded as the agent last read it. */
async function proposed(h: HarnessView, overrides: Record<string, unknown> = {}, ctx: ServiceContext = h.ctx): Promise<PlanView> {
  const n = 100 + ++seq;
  h.target.set(`/contacts/${n}`, { id: n, name: "Ana Lima", email: "ana@old.example" });
  const { plan } = await submitPlan(ctx, {
    agent: h.agent,
    request: mergeRequest({
      title: `edited plan ${n}`,
      actions: [{ kind: "http.json", target: "crm", path: `/contacts/${n}`, op: "merge", body: { email: "ana@agent.example", apiToken: "tok-agent" } }],
      ...overrides,
    }),
  });
  return plan;
}
const web = (userId: string) => ({ userId, via: "web" as const });
const edit = (h: HarnessView, plan: Pick<PlanView, "id" | "hash">, userId: string, values: Record<string, string>, ctx: ServiceContext = h.ctx) =>
  editPlan(ctx, { planId: plan.id, hash: plan.hash, person: web(userId), values });
const approve = (h: HarnessView, plan: Pick<PlanView, "id" | "hash">, userId: string) =>
  decide(h.ctx, { planId: plan.id, hash: plan.hash, actor: web(userId), verdict: "approve" });

describe.each(databaseKinds)("edit before approve ($name)", (kind) => {
  const h = useHarness(kind, { sinks: ["slack", "webhook"] });
  const quorum2 = h.another({ defaults: { requiredApprovals: 2 } });
  const pair = h.another({ defaults: { approvers: ["U0ALICE", "U0BOB"], requiredApprovals: 2 } });
  const locked = h.another({ targets: (url) => ({ crm: targetConfig(url, { policy: { edits: false } }) }) });
  const small = h.another({ targets: (url) => ({ crm: targetConfig(url, { allow: { ops: ["merge"], paths: ["/**"], maxBodyBytes: 120 } }) }) });
  const limited = h.another({});

  const db = () => h.database.db;
  const row = async (id: string) => (await db().select().from(plans).where(eq(plans.id, id)))[0]!;
  const planCount = () => db().$count(plans);

  it("edit, then approval by another person: a new version is applied once with the edited value, and the agent sees whose edit it was", async () => {
    const old = await proposed(h, { callbackUrl: "http://127.0.0.1:9/cb" });
    const path = old.plan.actions[0]!.path;
    h.clock.advance(30);
    const { plan: next, edits } = await edit(h, old, "U0BOB", { "0:/email": '"ana@reviewer.example"' });
    expect(edits).toEqual([{ key: "0:/email", from: "ana@agent.example", to: "ana@reviewer.example" }]);

    // The new version is the agent's plan: its agent reads it, hashed with who edited it.
    const mine = await getPlan(h.ctx, { agent: h.agent, planId: next.id });
    expect(mine.status).toBe("pending");
    expect(mine.plan.editedBy).toEqual({ userId: "U0BOB", via: "web" });
    expect(mine.plan.supersedes).toBe(old.id);
    expect(fingerprint(mine.plan)).toBe(mine.hash);
    expect(mine.plan.actions[0]).toMatchObject({ path, op: "merge", body: { email: "ana@reviewer.example", apiToken: "tok-agent" } });
    expect(mine.preview.actions[0]!.changes).toContainEqual({ path: "/email", from: "ana@old.example", to: "ana@reviewer.example" });
    // Its own expiry: as long to decide as the agent gave the version it replaces, from the edit.
    expect(Date.parse(next.expiresAt) - Date.parse(old.expiresAt)).toBe(30_000);
    expect((await row(next.id)).callbackUrl).toBe("http://127.0.0.1:9/cb");

    const was = await getPlan(h.ctx, { agent: h.agent, planId: old.id });
    expect(was.status).toBe("superseded");
    expect(was.supersededBy).toEqual({ id: next.id, hash: next.hash, reviewUrl: next.reviewUrl, editedBy: { userId: "U0BOB", via: "web" } });

    // The editor is a requester of the new version: their own Approve is refused.
    expect((await refusal(approve(h, next, "U0BOB"))).code).toBe("self_approval");
    expect((await approve(h, next, "U0ALICE")).status).toBe("approved");

    let claim = (await claimApproved(h.ctx))!;
    while (claim.plan.id !== next.id) claim = (await claimApproved(h.ctx))!;
    const writesBefore = h.target.writes().length;
    const write = targetConfig(h.target.url, { write: { headers: { Authorization: `Bearer ${WRITE_TOKEN}` } } });
    const outcome = await executePlan(claim, executionPorts(await loadVerifyingKeys((await testGrantKeys()).publicPem), { crm: write }, h.clock.now));
    expect(outcome.status).toBe("applied");
    expect(await reportOutcome(h.ctx, { claimToken: claim.claimToken, outcome })).toEqual({ status: "applied" });
    expect(h.target.writes().length).toBe(writesBefore + 1);
    expect(h.target.get(path)).toMatchObject({ email: "ana@reviewer.example", apiToken: "tok-agent" });
    expect((await row(old.id)).status).toBe("superseded");
  });

  it("every edit is an audit event naming the person, the old and the new hash; the webhook of the old plan says whose edit replaced it", async () => {
    const old = await proposed(h, { callbackUrl: "http://127.0.0.1:9/cb" });
    const { plan: next } = await edit(h, old, "U0CAROL", { "0:/email": '"carol@fix.example"' });
    const [superseded] = await db()
      .select()
      .from(auditEvents)
      .where(and(eq(auditEvents.planId, old.id), eq(auditEvents.type, "plan.superseded")));
    expect(superseded!.actor).toEqual({ type: "user", userId: "U0CAROL", via: "web" });
    expect(superseded!.data).toEqual({ supersededBy: next.id, hash: next.hash, oldHash: old.hash, editedBy: { userId: "U0CAROL", via: "web" } });
    const [submitted] = await db()
      .select()
      .from(auditEvents)
      .where(and(eq(auditEvents.planId, next.id), eq(auditEvents.type, "plan.submitted")));
    expect(submitted!.actor).toEqual({ type: "user", userId: "U0CAROL", via: "web" });
    expect(submitted!.data).toMatchObject({ supersedes: old.id, editedBy: { userId: "U0CAROL", via: "web" } });

    const [queued] = await db()
      .select({ payload: outbox.payload })
      .from(outbox)
      .where(and(eq(outbox.planId, old.id), eq(outbox.kind, "webhook")))
      .orderBy(outbox.id)
      .offset(1);
    const posted: string[] = [];
    const fakeFetch = (async (_url: string, init: RequestInit) => {
      posted.push(String(init.body));
      return new Response(null, { status: 204 });
    }) as unknown as typeof fetch;
    const event = (typeof queued!.payload === "string" ? JSON.parse(queued!.payload) : queued!.payload) as PlanEvent;
    expect(event.type).toBe("plan.superseded");
    await webhookSink(h.ctx, fakeFetch)(event, { id: 1 } as never);
    expect(JSON.parse(posted[0]!)).toMatchObject({
      planId: old.id,
      status: "superseded",
      supersededBy: { id: next.id, hash: next.hash, editedBy: { userId: "U0CAROL", via: "web" } },
    });
  });

  it("the people whose approvals the old version had are told in its thread that they must approve again", async () => {
    const old = await proposed(quorum2);
    expect((await approve(quorum2, old, "U0ALICE")).status).toBe("pending");
    const { plan: next } = await edit(quorum2, old, "U0BOB", { "0:/email": '"ana@second.example"' });
    const view = (await slackViewOf(quorum2.ctx, old.id))!;
    const event = {
      planId: old.id,
      type: "plan.superseded",
      status: "superseded",
      hash: old.hash,
      at: "",
      data: { editedBy: { userId: "U0BOB", via: "web" } },
    };
    const reply = renderThreadReply(threadEventOf(event, view)!);
    expect(reply.text).toContain("Values edited by <@U0BOB>");
    expect(reply.text).toContain(shortHash(next.hash));
    expect(reply.text).toMatch(/<@U0ALICE>: your approval was for this version and does not carry over/);
    // Approvals never carry over: the new version starts with none.
    expect((await getPlan(quorum2.ctx, { agent: quorum2.agent, planId: next.id })).approvals).toEqual([]);
  });

  it("refuses values that are not the plan's, secrets, bare words and no change at all, naming each; nothing is stored", async () => {
    const old = await proposed(h);
    const before = await planCount();
    const bare = await refusal(edit(h, old, "U0BOB", { "0:/email": "ana@new.example" }));
    expect(bare.code).toBe("invalid_request");
    expect(bare.issues).toEqual([{ path: "/values/0:~1email", message: 'not JSON: quote strings ("ana@new.example")' }]);
    const wrong = await refusal(edit(h, old, "U0BOB", { "0:/phone": '"1"', "0:/apiToken": '"tok-2"' }));
    expect(wrong.issues?.map((i) => i.message)).toEqual([expect.stringContaining("not a value this plan writes"), expect.stringContaining("a secret")]);
    expect((await refusal(edit(h, old, "U0BOB", { "0:/email": '"ana@agent.example"' }))).message).toContain("nothing changed");
    expect(await planCount()).toBe(before);
    expect((await row(old.id)).status).toBe("pending");
  });

  it("only someone who may decide the plan edits it: outsiders, the requester and plans whose policy says edits: false are refused", async () => {
    const old = await proposed(h);
    expect((await refusal(edit(h, old, "U0MALLORY", { "0:/email": '"x@x.example"' }))).code).toBe("not_an_approver");
    expect((await refusal(edit(h, old, "U0REQUESTER", { "0:/email": '"x@x.example"' }))).code).toBe("self_approval");
    const keep = await proposed(locked);
    expect(keep.plan.policy.edits).toBe(false);
    const off = await refusal(edit(locked, keep, "U0BOB", { "0:/email": '"x@x.example"' }));
    expect(off.code).toBe("not_editable");
    expect((await refusal(editForm(locked.ctx, { planId: keep.id, hash: keep.hash, person: web("U0BOB") }))).code).toBe("not_editable");
    // Plans of targets that allow edits record nothing, so they hash as they always did.
    expect(old.plan.policy).not.toHaveProperty("edits");
  });

  it("the edited version goes through the targets' allow rules again: a value over maxBodyBytes is refused", async () => {
    const old = await proposed(small);
    const err = await refusal(edit(small, old, "U0BOB", { "0:/email": JSON.stringify("x".repeat(200)) }));
    expect(err.code).toBe("policy_denied");
    expect(err.message).toContain("maxBodyBytes");
  });

  it("an edit that would leave fewer eligible approvers than the quorum is refused naming them", async () => {
    const old = await proposed(pair);
    const before = await planCount();
    const err = await refusal(edit(pair, old, "U0BOB", { "0:/email": '"bob@fix.example"' }));
    expect(err.code).toBe("policy_denied");
    expect(err.message).toContain("U0ALICE");
    expect(err.details).toEqual({ approvers: ["U0ALICE"], requiredApprovals: 2 });
    expect(await planCount()).toBe(before);
  });

  it("a plan edited, decided, stale or expired meanwhile is refused with what it is now; the old version names the newer one", async () => {
    const old = await proposed(h);
    const { plan: next } = await edit(h, old, "U0BOB", { "0:/email": '"first@fix.example"' });
    const again = await refusal(edit(h, old, "U0CAROL", { "0:/email": '"second@fix.example"' }));
    expect(again.code).toBe("hash_mismatch");
    expect(again.message).toContain(shortHash(next.hash));
    expect(again.details).toMatchObject({ supersededBy: { id: next.id, hash: next.hash } });

    const approved = await proposed(h);
    await approve(h, approved, "U0ALICE");
    expect((await refusal(edit(h, approved, "U0BOB", { "0:/email": '"x@x.example"' }))).details).toEqual({ status: "approved" });

    const stale = await proposed(h);
    await db().transaction((tx) => transition(h.ctx, tx, { planId: stale.id, transition: "drift", actor: { type: "system", process: "watcher" } }));
    expect((await refusal(edit(h, stale, "U0BOB", { "0:/email": '"x@x.example"' }))).details).toEqual({ status: "stale" });

    const late = await proposed(h);
    h.clock.advance(3600);
    expect((await refusal(edit(h, late, "U0BOB", { "0:/email": '"x@x.example"' }))).code).toBe("plan_expired");
  });

  it("an edit succeeds while the agent is at its limits: the agent's admission guard does not hold a reviewer's edit back", async () => {
    const ctx: ServiceContext = { ...limited.ctx, config: { ...limited.ctx.config, limits: { plansPerMinute: 1, maxPending: 1, agents: {} } } };
    const old = await proposed(limited, {}, ctx);
    expect((await refusal(proposed(limited, {}, ctx))).code).toBe("rate_limited");
    const { plan: next } = await edit(limited, old, "U0BOB", { "0:/email": '"ana@limit.example"' }, ctx);
    expect((await row(next.id)).status).toBe("pending");
    // The agent itself is still held to them.
    expect((await refusal(proposed(limited, {}, ctx))).code).toBe("rate_limited");
  });

  it("the edit form offers every value as JSON to change, secrets named but not shown", async () => {
    const old = await proposed(h);
    const form = await editForm(h.ctx, { planId: old.id, hash: old.hash, person: web("U0CAROL") });
    expect(form).toEqual({
      planId: old.id,
      hash: old.hash,
      fields: [
        { key: "0:/email", action: 0, target: "crm", path: old.plan.actions[0]!.path, pointer: "/email", masked: false, text: '"ana@agent.example"' },
        { key: "0:/apiToken", action: 0, target: "crm", path: old.plan.actions[0]!.path, pointer: "/apiToken", masked: true },
      ],
    });
  });
});
