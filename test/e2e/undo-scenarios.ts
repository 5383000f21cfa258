import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JsonResourceServer } from "../../src/demo/json-resource-server.ts";
import { executePlan } from "../../src/executor/execute-plan.ts";
import { loadVerifyingKeys } from "../../src/grant/keys.ts";
import { shortHash } from "../../src/plan/fingerprint.ts";
import { runServer, type RunningServer } from "../../src/server/run-server.ts";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import { decide } from "../../src/service/decide/decide.ts";
import { claimApproved } from "../../src/service/execution/claim-approved.ts";
import { reportOutcome } from "../../src/service/execution/report-outcome.ts";
import { createLoginLink } from "../../src/service/sign-in/login-links.ts";
import type { Database } from "../../src/store/db.ts";
import type { PlanView } from "../../src/contract/agent-api.ts";
import type { TestDatabaseKind } from "../support/databases.ts";
import { executionPorts } from "../support/execution-ports.ts";
import { READ_TOKEN, silentLogger, targetConfig, testConfig, testGrantKeys, WRITE_TOKEN } from "../support/harness.ts";
import { SlackEmulator, type SlackMessage } from "../support/slack-emulator.ts";
import { httpInteractions, SlackPayloads, SlackRequests, type SlackInteractions } from "../support/slack-requests.ts";
import { SocketModeEmulator } from "../support/socket-mode-emulator.ts";
import { waitFor } from "../support/wait-for.ts";
import { freePort } from "../support/free-port.ts";

const CHANNEL = "C0REVIEW";
const SIGNING_SECRET = "slack-signing-secret-for-undo";

/**
 * Undo after apply end to end, registered here and run on PGlite over Slack's HTTP mode by
 * test/e2e/undo.test.ts, and on PostgreSQL over Socket Mode by test/slow/undo-socket-postgres.test.ts:
 * the agent API over HTTP, Slack (the emulator; clicks signed as Slack signs them, or envelopes on its socket), the
 * browser's forms over HTTP, and the executor's apply in-process against the real target. A
 * person proposes the undo from the applied plan's Slack message; both threads link to each
 * other; the asker's own Approve is refused; a second ask points at the open undo; another
 * approver approves it on the page; the target is back as it was, and the plan says by whom.
 */
export function undoScenarios(kind: TestDatabaseKind, door: "http" | "socket" = "http"): void {
  describe(`undo over HTTP, in Slack (${door}) and on the page, on ${kind.name}`, () => {
    const s = {} as {
      database: Database;
      target: JsonResourceServer;
      slack: SlackEmulator;
      socket?: SocketModeEmulator;
      server: RunningServer;
      key: string;
      door: SlackInteractions;
    };

    beforeAll(async () => {
      s.database = await kind.open();
      s.target = new JsonResourceServer({
        seed: { "/contacts/1": { id: 1, name: "Ana", email: "ana@old.example" }, "/contacts/2": { id: 2, email: "bo@old.example" } },
        readTokens: [READ_TOKEN],
        writeToken: WRITE_TOKEN,
      });
      await s.target.start();
      s.slack = new SlackEmulator({ teamId: "T0TEST" });
      await s.slack.start();
      if (door === "socket") {
        s.socket = new SocketModeEmulator(s.slack);
        await s.socket.start();
      }
      // The browser's forms must come from the public URL's origin: the server listens there.
      const port = await freePort();
      const config = {
        ...testConfig({ crm: targetConfig(s.target.url) }, { approvers: ["U0ALICE", "U0BOB"], requiredApprovals: 1 }),
        port,
        publicUrl: `http://127.0.0.1:${port}`,
        slack: {
          enabled: true as const,
          botToken: s.slack.botToken,
          ...(s.socket ? { signingSecret: undefined, appToken: s.socket.appToken } : { signingSecret: SIGNING_SECRET, appToken: undefined }),
          apiUrl: s.slack.url,
          reviewChannel: CHANNEL,
          digest: { afterSeconds: 0 },
        },
      };
      s.server = await runServer({
        config,
        logger: silentLogger,
        database: s.database,
        hostname: "127.0.0.1",
        grantKey: (await testGrantKeys()).signing,
        sweepMs: 3_600_000,
        remindMs: 3_600_000,
        deliverMs: 50,
      });
      s.key = (await addAgent(s.server.ctx, { name: "undoer" })).key;
      s.door = s.socket
        ? s.socket.interactions(new SlackPayloads({ teamId: "T0TEST" }))
        : httpInteractions(new SlackRequests({ baseUrl: s.server.url, signingSecret: SIGNING_SECRET, teamId: "T0TEST" }));
    });

    afterAll(async () => {
      await s.server?.close();
      await s.socket?.stop();
      await s.slack?.stop();
      await s.target?.stop();
      await s.database?.close();
    });

    const call = (method: string, path: string, body?: object) =>
      fetch(s.server.url + path, {
        method,
        headers: { authorization: `Bearer ${s.key}`, ...(body ? { "content-type": "application/json" } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
    /** Approval, claim, the executor's apply over HTTP to the target, and its report, as the processes do it. */
    async function approveAndApply(plan: PlanView, approver: string): Promise<void> {
      await decide(s.server.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: approver, via: "web" }, verdict: "approve" });
      await applyApproved(plan);
    }
    async function applyApproved(plan: PlanView): Promise<void> {
      const claim = await claimApproved(s.server.ctx);
      expect(claim?.plan.id).toBe(plan.id);
      const write = { crm: targetConfig(s.target.url, { write: { headers: { Authorization: `Bearer ${WRITE_TOKEN}` } } }) };
      const ports = executionPorts(await loadVerifyingKeys((await testGrantKeys()).publicPem), write);
      await reportOutcome(s.server.ctx, { claimToken: claim!.claimToken, outcome: await executePlan(claim!, ports) });
    }
    const blocksOf = (m: SlackMessage | undefined) => JSON.stringify(m?.blocks ?? []);
    /** A plan's preview: found by the hash its buttons carry, then by its ts once its buttons are gone. */
    const posted = new Map<string, string>();
    const previewOf = (plan: PlanView) => {
      const ts = posted.get(plan.id);
      const found = s.slack.messagesIn(CHANNEL).find((m) => (ts ? m.ts === ts : blocksOf(m).includes(`\\"hash\\":\\"${plan.hash}\\"`)));
      if (found) posted.set(plan.id, found.ts);
      return found;
    };
    const button = (m: SlackMessage, actionId: string) =>
      (m.blocks ?? [])
        .flatMap((b) => ((b as { type: string }).type === "actions" ? ((b as { elements: { action_id: string; value?: string }[] }).elements ?? []) : []))
        .find((e) => e.action_id === actionId);
    const click = (m: SlackMessage, user: string, actionId: string) =>
      s.door.blockAction({ user, actionId, value: button(m, actionId)!.value!, channelId: CHANNEL, messageTs: m.ts });
    const toldTo = (user: string, pattern: RegExp) => s.slack.ephemerals.find((e) => e.user === user && pattern.test(e.text ?? ""));
    const threadOf = (m: SlackMessage) => s.slack.thread(CHANNEL, m.ts).map((r) => r.text ?? "");

    /** A signed-in browser session: the cookie and the CSRF token of a page. */
    async function signIn(userId: string): Promise<{ cookie: string; csrf: (page: string) => string }> {
      const { url } = await createLoginLink(s.server.ctx, { userId, via: "cli" });
      const res = await fetch(url, { method: "POST", redirect: "manual", headers: { origin: s.server.url } });
      expect(res.status).toBe(303);
      const cookie = `cs_session=${/cs_session=([^;]+)/.exec(res.headers.get("set-cookie") ?? "")?.[1]}`;
      return { cookie, csrf: (page) => /name="_csrf" value="([^"]+)"/.exec(page)![1]! };
    }
    const page = async (cookie: string, path: string) => (await fetch(s.server.url + path, { headers: { cookie } })).text();
    const post = (cookie: string, path: string, form: Record<string, string>) =>
      fetch(s.server.url + path, {
        method: "POST",
        redirect: "manual",
        headers: { cookie, origin: s.server.url, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams(form).toString(),
      });

    let original: PlanView;
    let undo: PlanView;

    it("an applied plan's message offers Propose undo; a click posts the undo for review and links both threads", async () => {
      const answer = await call("POST", "/v1/plans", {
        title: "Fix Ana's email",
        actions: [{ kind: "http.json", target: "crm", path: "/contacts/1", op: "merge", body: { email: "ana@new.example", phone: "555" } }],
      });
      expect(answer.status).toBe(201);
      original = (await answer.json()) as PlanView;
      await waitFor("the preview", () => previewOf(original));
      await approveAndApply(original, "U0ALICE");
      const applied = await waitFor("the preview, applied, with Propose undo", () => {
        const m = previewOf(original);
        return m && button(m, "propose_undo") ? m : undefined;
      });

      expect((await click(applied, "U0BOB", "propose_undo")).acked).toBe(true);
      const told = await waitFor("the asker told", () => toldTo("U0BOB", /Your undo is plan/));
      const undoId = /\/plans\/([0-9a-f-]{36})/.exec(told.text ?? "")![1]!;
      undo = (await (await call("GET", `/v1/plans/${undoId}`)).json()) as PlanView;
      expect(undo).toMatchObject({ status: "pending", plan: { undoes: original.id, askedBy: { userId: "U0BOB", via: "slack" } } });

      // The undo's own message links back to the plan it takes back; the plan's thread links to the undo.
      const posted = await waitFor("the undo's preview", () => previewOf(undo));
      expect(posted.thread_ts).toBeUndefined();
      expect(blocksOf(posted)).toContain(`↩️ Undoes <${original.reviewUrl}|version ${shortHash(original.hash)}>, asked by <@U0BOB>`);
      await waitFor("the link in the plan's thread", () =>
        threadOf(applied).find((t) => t.includes(`Undo proposed by <@U0BOB>: <${undo.reviewUrl}|version ${shortHash(undo.hash)}>`)),
      );
    });

    it("the asker's own Approve is refused; a second Propose undo points at the open one", async () => {
      const posted = previewOf(undo)!;
      await click(posted, "U0BOB", "approve");
      await waitFor("self-approval refused", () => toldTo("U0BOB", /on your behalf/i));
      await click(previewOf(original)!, "U0ALICE", "propose_undo");
      const told = await waitFor("the open undo named", () => toldTo("U0ALICE", /already pending/));
      expect(told.text).toContain(undo.reviewUrl);
      const pending = await call("POST", `/v1/plans/${original.id}/undo`);
      expect(pending.status).toBe(409);
      expect(await pending.json()).toMatchObject({ error: { code: "undo_open", details: { planId: undo.id } } });
    });

    it("on the page: Propose undo leads to the open undo; another approver approves it; the target is back and both pages say so", async () => {
      const alice = await signIn("U0ALICE");
      const originalPage = await page(alice.cookie, `/plans/${original.id}`);
      expect(originalPage).toContain("data-undo-form");
      const again = await post(alice.cookie, `/plans/${original.id}/undo`, { _csrf: alice.csrf(originalPage) });
      expect(again.status).toBe(303);
      expect(again.headers.get("location")).toBe(`/plans/${undo.id}`);

      const undoPage = await page(alice.cookie, `/plans/${undo.id}`);
      expect(undoPage).toContain('data-version-link="undoes"');
      const approved = await post(alice.cookie, `/plans/${undo.id}/approve`, { _csrf: alice.csrf(undoPage), hash: undo.hash });
      expect(approved.status).toBe(303);
      await applyApproved(undo);
      expect(s.target.get("/contacts/1")).toEqual({ id: 1, name: "Ana", email: "ana@old.example" });

      const seen = (await (await call("GET", `/v1/plans/${original.id}`)).json()) as PlanView;
      expect(seen.undoneBy).toMatchObject({ id: undo.id, hash: undo.hash });
      expect(await page(alice.cookie, `/plans/${original.id}`)).toContain('data-version-link="undone-by"');
      const taken = await waitFor("the plan's message taken back, its button gone", () => {
        const m = previewOf(original);
        return m && blocksOf(m).includes("Taken back by") && !button(m, "propose_undo") ? m : undefined;
      });
      await waitFor("the plan's thread told", () => threadOf(taken).find((t) => t.startsWith("↩️ Taken back:")));
      const after = await call("POST", `/v1/plans/${original.id}/undo`, {});
      expect(await after.json()).toMatchObject({ error: { code: "not_undoable", details: { undoneBy: undo.id } } });
    });

    it("the agent asks over HTTP: 201 with the undo; a target changed since is refused naming the field", async () => {
      const submitted = (await (
        await call("POST", "/v1/plans", {
          title: "Bo's email",
          actions: [{ kind: "http.json", target: "crm", path: "/contacts/2", op: "merge", body: { email: "bo@new.example" } }],
        })
      ).json()) as PlanView;
      expect((await call("POST", `/v1/plans/${submitted.id}/undo`, {})).status).toBe(409);
      await approveAndApply(submitted, "U0BOB");
      s.target.set("/contacts/2", { id: 2, email: "bo@third.example" });
      const changed = await call("POST", `/v1/plans/${submitted.id}/undo`, {});
      expect(changed.status).toBe(409);
      expect(await changed.json()).toMatchObject({ error: { code: "undo_target_changed", details: { actions: [{ fields: [{ path: "/email" }] }] } } });

      s.target.set("/contacts/2", { id: 2, email: "bo@new.example" });
      const asked = await call("POST", `/v1/plans/${submitted.id}/undo`, { idempotencyKey: "undo-bo" });
      expect(asked.status).toBe(201);
      const made = (await asked.json()) as PlanView;
      expect(made.undoes).toEqual({ id: submitted.id, hash: submitted.hash, reviewUrl: submitted.reviewUrl });
      expect(made.plan.actions).toEqual([
        { kind: "http.json", target: "crm", path: "/contacts/2", op: "merge", body: { email: "bo@old.example" }, ...pick(made.plan.actions[0]!) },
      ]);
      expect((await call("POST", `/v1/plans/${submitted.id}/undo`, { idempotencyKey: "undo-bo" })).status).toBe(200);
    });
  });
}

/** The fields the preview fixes beside what the action sends. */
function pick(action: PlanView["plan"]["actions"][number]) {
  return { precondition: action.precondition, beforeDigest: action.beforeDigest, afterDigest: action.afterDigest };
}
