import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_FORM_BYTES } from "../../src/http/form-body.ts";
import { runServer, type RunningServer } from "../../src/server/run-server.ts";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import { createLoginLink } from "../../src/service/sign-in/login-links.ts";
import { submitPlan } from "../../src/service/intake/submit-plan.ts";
import { JsonResourceServer } from "../../src/demo/json-resource-server.ts";
import type { Database } from "../../src/store/db.ts";
import { pglite } from "../support/databases.ts";
import { freePort } from "../support/free-port.ts";
import { READ_TOKEN, silentLogger, targetConfig, testConfig, testGrantKeys, WRITE_TOKEN } from "../support/harness.ts";
import { HUNDRED_MB, streamPost } from "../support/stream-post.ts";

const EXECUTOR_TOKEN = "executor-token-for-body-limits-0123456789";
const ADMIN = "U0ADMIN";

/** A route that reads a body, how to reach it, and what it answers an oversized one. */
export interface BodyRoute {
  name: string;
  path: (plan: string) => string;
  kind: "form" | "json";
  /** Headers that get past authentication (a session cookie, a bearer token), when signed in. */
  auth: "session" | "agent" | "executor" | "none";
}

export const BODY_ROUTES: BodyRoute[] = [
  { name: "approve form", path: (p) => `/plans/${p}/approve`, kind: "form", auth: "session" },
  { name: "reject form", path: (p) => `/plans/${p}/reject`, kind: "form", auth: "session" },
  { name: "revoke form", path: (p) => `/plans/${p}/revoke`, kind: "form", auth: "session" },
  { name: "batch approve form", path: (p) => `/batches/${p}/approve`, kind: "form", auth: "session" },
  { name: "batch reject form", path: (p) => `/batches/${p}/reject`, kind: "form", auth: "session" },
  { name: "undo form", path: (p) => `/plans/${p}/undo`, kind: "form", auth: "session" },
  { name: "edit form", path: (p) => `/plans/${p}/edit`, kind: "form", auth: "session" },
  { name: "delegation form", path: () => "/delegations", kind: "form", auth: "session" },
  { name: "delegation end form", path: () => "/delegations/6f1c7f1e-4a1b-4c1d-8e1f-0a1b2c3d4e5f/end", kind: "form", auth: "session" },
  { name: "pause form", path: () => "/pause", kind: "form", auth: "session" },
  { name: "resume form", path: () => "/resume", kind: "form", auth: "session" },
  { name: "dead-delivery retry form", path: () => "/lanes/dead/1/retry", kind: "form", auth: "session" },
  { name: "logout form", path: () => "/logout", kind: "form", auth: "session" },
  { name: "login confirmation", path: () => "/login/not-a-real-token", kind: "form", auth: "none" },
  { name: "agent API plan", path: () => "/v1/plans", kind: "json", auth: "agent" },
  { name: "agent API undo", path: (p) => `/v1/plans/${p}/undo`, kind: "json", auth: "agent" },
  { name: "executor report", path: () => "/v1/executor/claims/some-claim/report", kind: "json", auth: "executor" },
];

/**
 * Every route that reads a body, posted 100 MB signed in and not, declared and streamed: each is
 * refused (413, or 401/403 before a byte is read), the client is cut off long before it sends it
 * all, `/healthz` answers after every request, and the process holding the server grows by less
 * than 64 MB at its peak over the whole sweep.
 */
export function describeBodyLimitSweep(title: string, routes: BodyRoute[], modes: { chunked: boolean; signedIn: boolean }[]): void {
  describe(title, () => {
    let database: Database;
    let target: JsonResourceServer;
    let server: RunningServer;
    let origin: string;
    let planId: string;
    let cookie: string;
    let csrf: string;
    let agentKey: string;

    beforeAll(async () => {
      database = await pglite.open();
      target = new JsonResourceServer({ seed: { "/contacts/1": { id: 1, email: "a@old.example" } }, readTokens: [READ_TOKEN], writeToken: WRITE_TOKEN });
      await target.start();
      const port = await freePort();
      origin = `http://127.0.0.1:${port}`;
      const config = { ...testConfig({ crm: targetConfig(target.url) }), port, publicUrl: origin, admins: [ADMIN], executorToken: EXECUTOR_TOKEN };
      server = await runServer({
        config,
        logger: silentLogger,
        database,
        hostname: "127.0.0.1",
        grantKey: (await testGrantKeys()).signing,
        sweepMs: 3_600_000,
        remindMs: 3_600_000,
      });
      const agent = await addAgent(server.ctx, { name: "body-limit-agent" });
      agentKey = agent.key;
      planId = (
        await submitPlan(server.ctx, {
          agent,
          request: {
            title: "Body limits",
            actions: [{ kind: "http.json", target: "crm", path: "/contacts/1", op: "merge", body: { email: "b@new.example" } }],
          },
        })
      ).plan.id;
      const { url } = await createLoginLink(server.ctx, { userId: ADMIN, via: "cli" });
      const res = await fetch(url, { method: "POST", redirect: "manual", headers: { origin } });
      expect(res.status).toBe(303);
      cookie = `cs_session=${/cs_session=([^;]+)/.exec(res.headers.get("set-cookie") ?? "")?.[1]}`;
      csrf = /name="_csrf" value="([^"]+)"/.exec(await (await fetch(`${origin}/plans`, { headers: { cookie } })).text())![1]!;
    });
    afterAll(async () => {
      await server?.close();
      await target?.stop();
      await database?.close();
    });

    const headersFor = (route: BodyRoute, signedIn: boolean): Record<string, string> => {
      if (route.kind === "form") return { origin, ...(signedIn && route.auth === "session" ? { cookie } : {}) };
      const json = { "content-type": "application/json" };
      if (!signedIn) return json;
      if (route.auth === "agent") return { ...json, authorization: `Bearer ${agentKey}` };
      if (route.auth === "executor") return { ...json, authorization: `Bearer ${EXECUTOR_TOKEN}` };
      return json;
    };

    it(`refuses 100 MB on ${routes.map((r) => r.name).join(", ")}, keeps serving, and holds less than 64 MB more at its peak`, async () => {
      global.gc?.();
      const before = process.memoryUsage().rss;
      let peak = before;
      const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
      try {
        for (const route of routes) {
          for (const { chunked, signedIn } of modes) {
            const what = `${route.name} (${chunked ? "chunked" : "declared"}, ${signedIn ? "signed in" : "signed out"})`;
            const prefix = route.kind === "form" ? `_csrf=${signedIn ? csrf : "x"}&hash=sha256%3A00&reason=` : '{"title":"';
            const sent = await streamPost(`${origin}${route.path(planId)}`, HUNDRED_MB, { chunked, prefix, headers: headersFor(route, signedIn) });
            // A form declared oversized is refused before anything else, a streamed one at the cap;
            // a caller nobody signed in is refused before a byte is read (JSON doors check the
            // bearer token first, forms the session once the declared length passed).
            // The login confirmation reads no body at all: a streamed one is answered unread.
            const refusedUnread = (!signedIn && route.auth !== "none" && (chunked || route.kind === "json")) || (chunked && route.auth === "none");
            if (refusedUnread) expect([401, 403], what).toContain(sent.status);
            else expect(sent.status, `${what}: ${sent.body.slice(0, 200)}`).toBe(413);
            expect(sent.sentBytes, what).toBeLessThan(HUNDRED_MB / 2);
            if (route.kind === "form" && sent.status === 413) expect(sent.body, what).toContain(`${MAX_FORM_BYTES / 1024} KiB`);
            const health = await fetch(`${origin}/healthz`);
            expect(health.status, `healthz after ${what}`).toBe(200);
          }
        }
      } finally {
        clearInterval(sampler);
      }
      expect((peak - before) / 1024 / 1024).toBeLessThan(64);
      // The session survived: the sweep's refusals changed nothing.
      expect((await fetch(`${origin}/plans`, { headers: { cookie } })).status).toBe(200);
    });

    it("still takes an ordinary form whose reason fills most of the cap", async () => {
      const reason = "r".repeat(1000);
      const res = await fetch(`${origin}/pause`, {
        method: "POST",
        redirect: "manual",
        headers: { cookie, origin, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ _csrf: csrf, reason, filler: "f".repeat(MAX_FORM_BYTES - 2000) }).toString(),
      });
      expect(res.status).toBe(303);
      const resumed = await fetch(`${origin}/resume`, {
        method: "POST",
        redirect: "manual",
        headers: { cookie, origin, "content-type": "multipart/form-data; boundary=XyZ" },
        body: `--XyZ\r\ncontent-disposition: form-data; name="_csrf"\r\n\r\n${csrf}\r\n--XyZ--\r\n`,
      });
      expect(resumed.status).toBe(303);
    });
  });
}
