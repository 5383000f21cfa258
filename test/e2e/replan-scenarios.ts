import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JsonResourceServer } from "../../src/demo/json-resource-server.ts";
import { shortHash } from "../../src/plan/fingerprint.ts";
import { runServer, type RunningServer } from "../../src/server/run-server.ts";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import { decide } from "../../src/service/decide/decide.ts";
import { createLoginLink } from "../../src/service/sign-in/login-links.ts";
import type { Database } from "../../src/store/db.ts";
import type { PlanView } from "../../src/contract/agent-api.ts";
import type { TestDatabaseKind } from "../support/databases.ts";
import { READ_TOKEN, silentLogger, targetConfig, testConfig, testGrantKeys, WRITE_TOKEN } from "../support/harness.ts";
import { SlackEmulator, type SlackMessage } from "../support/slack-emulator.ts";
import { waitFor } from "../support/wait-for.ts";

const CHANNEL = "C0REVIEW";
/** The target is re-read this often while a plan is open (the stale scenario). */
const WATCH_SECONDS = 1;

/**
 * Re-plans end to end, registered once here and run on PGlite by test/e2e/replan.test.ts and on
 * PostgreSQL by test/slow/replan-postgres.test.ts: the agent API over HTTP, the server's outbox
 * posting to the Slack emulator over HTTP, its target watcher reading the target over HTTP. One
 * conversation per intent: each new version's preview (with its buttons) is a broadcast reply in
 * the first version's thread, and the version it replaces loses its buttons and points at it —
 * along a chain of three versions; a plan gone stale under the watcher is replaced the same way
 * and stays stale.
 */
export function replanScenarios(kind: TestDatabaseKind): void {
  describe(`re-plan over HTTP and in Slack, on ${kind.name}`, () => {
    const s = {} as { database: Database; target: JsonResourceServer; slack: SlackEmulator; server: RunningServer; key: string };

    beforeAll(async () => {
      s.database = await kind.open();
      s.target = new JsonResourceServer({
        seed: {
          "/contacts/1": { id: 1, email: "ana@old.example", apiToken: "tok-old" },
          "/contacts/2": { id: 2, email: "bo@example.com" },
          "/contacts/3": { id: 3, email: "cy@old.example" },
        },
        readTokens: [READ_TOKEN],
        writeToken: WRITE_TOKEN,
      });
      await s.target.start();
      s.slack = new SlackEmulator({ teamId: "T0TEST" });
      await s.slack.start();
      const config = {
        ...testConfig({ crm: targetConfig(s.target.url, { watch: { intervalSeconds: WATCH_SECONDS } }) }, { approvers: ["U0ALICE"], requiredApprovals: 1 }),
        slack: {
          enabled: true as const,
          botToken: s.slack.botToken,
          signingSecret: "slack-signing-secret-for-replans",
          appToken: undefined,
          apiUrl: s.slack.url,
          reviewChannel: CHANNEL,
          digest: { afterSeconds: 0 },
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
        watchMs: 200,
      });
      s.key = (await addAgent(s.server.ctx, { name: "replanner" })).key;
    });

    afterAll(async () => {
      await s.server?.close();
      await s.slack?.stop();
      await s.target?.stop();
      await s.database?.close();
    });

    const call = (method: string, path: string, body?: object) =>
      fetch(s.server.url + path, {
        method,
        headers: { authorization: `Bearer ${s.key}`, "content-type": "application/json" },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
    const version = (email: string, supersedes?: string, extra: object[] = []) => ({
      title: "Fix Ana's contact",
      actions: [{ kind: "http.json", target: "crm", path: "/contacts/1", op: "merge", body: { email, apiToken: `tok-${email}` } }, ...extra],
      ...(supersedes ? { supersedes } : {}),
    });
    async function submit(body: object): Promise<PlanView> {
      const answer = await call("POST", "/v1/plans", body);
      expect(answer.status, await answer.clone().text()).toBe(201);
      return (await answer.json()) as PlanView;
    }

    const blocksOf = (m: SlackMessage | undefined) => JSON.stringify(m?.blocks ?? []);
    const hasButtons = (m: SlackMessage | undefined) => blocksOf(m).includes('"action_id":"approve"');
    const root = () => s.slack.messagesIn(CHANNEL)[0];
    const previewOf = (plan: PlanView) =>
      root()?.replies.find(
        (r) => blocksOf(r).includes(`\\"hash\\":\\"${plan.hash}\\"`) || (r.history[0] && JSON.stringify(r.history[0].blocks).includes(plan.hash)),
      );

    const v: PlanView[] = [];

    it("version 2 (supersedes over HTTP) is a broadcast reply in version 1's thread, with its buttons and what changed; version 1 loses its buttons and points at it", async () => {
      v.push(await submit(version("ana@v1.example")));
      await waitFor("version 1's preview", () => hasButtons(root()));
      v.push(
        await submit(
          version("ana@v2.example", v[0]!.id, [{ kind: "http.json", target: "crm", path: "/contacts/2", op: "merge", body: { email: "bo@v2.example" } }]),
        ),
      );
      expect(v[1]!.supersedes).toEqual({ id: v[0]!.id, hash: v[0]!.hash, reviewUrl: v[0]!.reviewUrl });
      expect(v[1]!.plan.supersedes).toBe(v[0]!.id);

      const reply = await waitFor("version 2's preview in version 1's thread", () => previewOf(v[1]!));
      expect(String(reply.args.reply_broadcast)).toBe("true");
      expect(reply.thread_ts).toBe(root()!.ts);
      expect(hasButtons(reply)).toBe(true);
      const shown = blocksOf(reply);
      expect(shown).toContain(`Changed since version \`${shortHash(v[0]!.hash)}\``);
      expect(shown).toContain("added `merge` on `crm` `/contacts/2`");
      expect(shown).toContain("ana@v2.example");
      expect(shown).not.toContain("tok-ana@v2.example"); // a changed secret is masked as in previews
      expect(s.slack.messagesIn(CHANNEL)).toHaveLength(1); // one conversation per intent

      await waitFor("version 1 to lose its buttons and point at version 2", () => !hasButtons(root()) && blocksOf(root()).includes(v[1]!.reviewUrl));
      expect(blocksOf(root())).toContain("Superseded");

      const old = (await (await call("GET", `/v1/plans/${v[0]!.id}`)).json()) as PlanView;
      expect(old.status).toBe("superseded");
      expect(old.supersededBy?.id).toBe(v[1]!.id);
    });

    it("version 3 stays in the first thread; version 2's message loses its buttons; its approval is replied in that thread", async () => {
      v.push(await submit(version("ana@v3.example", v[1]!.id)));
      const reply = await waitFor("version 3's preview in version 1's thread", () => previewOf(v[2]!));
      expect(String(reply.args.reply_broadcast)).toBe("true");
      expect(blocksOf(reply)).toContain(`Changed since version \`${shortHash(v[1]!.hash)}\``);
      expect(blocksOf(reply)).toContain("removed `merge` on `crm` `/contacts/2`");
      await waitFor("version 2's message to lose its buttons", () => {
        const second = root()!.replies.find((r) => r.ts !== reply.ts && blocksOf(r).includes(v[2]!.reviewUrl));
        return second && !hasButtons(second);
      });
      expect(s.slack.messagesIn(CHANNEL)).toHaveLength(1);

      await decide(s.server.ctx, { planId: v[2]!.id, hash: v[2]!.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" });
      await waitFor("the approval of version 3 in the first thread", () =>
        root()!.replies.some((r) => r.ts !== reply.ts && /approved/i.test(r.text ?? "") && blocksOf(r).includes("U0ALICE")),
      );
    });

    it("the browser: version 3's page shows what changed since version 2 and links back; version 1's says superseded and links on", async () => {
      const publicUrl = s.server.ctx.config.publicUrl;
      const { url } = await createLoginLink(s.server.ctx, { userId: "U0ALICE", via: "cli" });
      const signIn = await fetch(url.replace(publicUrl, s.server.url), { method: "POST", redirect: "manual", headers: { origin: new URL(publicUrl).origin } });
      expect(signIn.status).toBe(303);
      const cookie = `cs_session=${/cs_session=([^;]+)/.exec(signIn.headers.get("set-cookie") ?? "")?.[1]}`;
      const page = async (plan: PlanView) => {
        const res = await fetch(`${s.server.url}/plans/${plan.id}`, { headers: { cookie } });
        expect(res.status).toBe(200);
        return res.text();
      };
      const third = await page(v[2]!);
      expect(third).toContain(`Changed since <a href="/plans/${v[1]!.id}">version ${shortHash(v[1]!.hash)}</a>`);
      expect(third).toContain("Removed");
      expect(third).toContain(`replaces</span> <a href="/plans/${v[1]!.id}" data-version-link="supersedes">`);
      expect(third).not.toContain("tok-ana@v3.example"); // masked, as in the preview
      const first = await page(v[0]!);
      expect(first).toContain("Superseded: the agent sent a newer version");
      expect(first).toContain(`<a href="/plans/${v[1]!.id}">version ${shortHash(v[1]!.hash)}</a>`);
      expect(first).not.toContain("Changed since");
    });

    it("a version already superseded, or another agent's plan, cannot be superseded: clear refusals over HTTP", async () => {
      const again = await call("POST", "/v1/plans", version("ana@again.example", v[0]!.id));
      expect(again.status).toBe(409);
      const body = (await again.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe("not_supersedable");
      expect(body.error.message).toContain(`already superseded by ${v[1]!.id}`);

      const other = (await addAgent(s.server.ctx, { name: "someone-else" })).key;
      const theirs = await fetch(s.server.url + "/v1/plans", {
        method: "POST",
        headers: { authorization: `Bearer ${other}`, "content-type": "application/json" },
        body: JSON.stringify(version("x@x.example", v[2]!.id)),
      });
      expect(theirs.status).toBe(404);
      expect(((await theirs.json()) as { error: { code: string } }).error.code).toBe("not_found");
    });

    it("a plan gone stale under the watcher is replaced: it stays stale, gains supersededBy, and its message says so; the new version is in its thread", async () => {
      const first = await submit({
        title: "Fix Cy's email",
        actions: [{ kind: "http.json", target: "crm", path: "/contacts/3", op: "merge", body: { email: "cy@new.example" } }],
      });
      const conversation = () => s.slack.messagesIn(CHANNEL).find((m) => blocksOf(m).includes(first.reviewUrl) && m.ts !== root()!.ts);
      await waitFor("the stale scenario's preview", () => hasButtons(conversation()));
      s.target.set("/contacts/3", { id: 3, email: "cy@someone-else.example" });
      await waitFor(
        "the watcher to find the plan stale",
        async () => ((await (await call("GET", `/v1/plans/${first.id}`)).json()) as PlanView).status === "stale",
      );

      const next = await submit({
        title: "Fix Cy's email",
        supersedes: first.id,
        actions: [{ kind: "http.json", target: "crm", path: "/contacts/3", op: "merge", body: { email: "cy@new.example" } }],
      });
      const was = (await (await call("GET", `/v1/plans/${first.id}`)).json()) as PlanView;
      expect(was.status).toBe("stale");
      expect(was.supersededBy?.id).toBe(next.id);
      const reply = await waitFor("the new version in the stale plan's thread", () =>
        conversation()?.replies.find((r) => blocksOf(r).includes(`\\"hash\\":\\"${next.hash}\\"`)),
      );
      expect(String(reply.args.reply_broadcast)).toBe("true");
      await waitFor(
        "the stale message to say it was replaced",
        () => blocksOf(conversation()).includes("Replaced by") && blocksOf(conversation()).includes(next.reviewUrl) && !hasButtons(conversation()),
      );
    });
  });
}
