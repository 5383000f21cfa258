import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyWebhook, type WebhookPayload } from "../../src/client/index.ts";
import type { Config } from "../../src/config/load.ts";
import { JsonResourceServer } from "../../src/demo/json-resource-server.ts";
import { runServer, type RunningServer } from "../../src/server/run-server.ts";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import { decide } from "../../src/service/decide/decide.ts";
import { reviewPlan } from "../../src/service/review/review-plan.ts";
import { submitPlan } from "../../src/service/intake/submit-plan.ts";
import { createLoginLink } from "../../src/service/sign-in/login-links.ts";
import type { Database } from "../../src/store/db.ts";
import { databaseKinds } from "../support/databases.ts";
import { freePort } from "../support/free-port.ts";
import { useServer } from "../support/use-harness.ts";
import { mergeRequest, READ_TOKEN, silentLogger, targetConfig, testConfig, testGrantKeys } from "../support/harness.ts";
import { waitFor } from "../support/wait-for.ts";

/** An agent's webhook endpoint that records what it receives, and can fail or go away. */
class Receiver {
  received: { headers: IncomingHttpHeaders; body: string; path: string }[] = [];
  /** Every request that reached it, whatever it answered. */
  hits = 0;
  answer = 200;
  private server: Server | undefined;
  port = 0;
  async start(port = 0) {
    this.server = createServer((req, res) => {
      this.hits++;
      let body = "";
      req.on("data", (d: Buffer) => (body += d.toString()));
      req.on("end", () => {
        if (this.answer === 200) this.received.push({ headers: req.headers, body, path: req.url ?? "" });
        res.writeHead(this.answer).end();
      });
    });
    await new Promise<void>((r) => this.server!.listen(port, "127.0.0.1", r));
    this.port = (this.server.address() as AddressInfo).port;
  }
  async stop() {
    this.server?.closeAllConnections();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
  url(path: string) {
    return `http://127.0.0.1:${this.port}${path}`;
  }
  statusesFor(path: string) {
    return this.received.filter((r) => r.path === path).map((r) => (JSON.parse(r.body) as WebhookPayload).status);
  }
}

describe.each(databaseKinds)("agent webhooks on $name", (kind) => {
  const s = useServer(kind, {
    seed: { "/contacts/1": { id: 1, email: "a@old.example" }, "/contacts/2": { id: 2, email: "b@old.example" } },
    config: async (url) => {
      receiver = new Receiver();
      await receiver.start();
      return {
        ...testConfig({ crm: targetConfig(url) }),
        webhooks: {
          allowedHosts: [`127.0.0.1:${receiver.port}`],
          agents: { "hooked-by-config": { callbackUrl: `http://127.0.0.1:${receiver.port}/by-config` } },
        },
      };
    },
    run: { deliverMs: 50, delivery: { maxAttempts: 5, leaseMs: 10_000, backoffMs: () => 150 } },
  });
  let receiver: Receiver;
  let agent: { id: string; name: string; webhookSecret: string };
  let defaulted: { id: string; name: string; webhookSecret: string };
  /** Lists another receiver's port in the running server's allowlist: only a listed port is called. */
  const allow = (port: number) => s.server.ctx.config.webhooks.allowedHosts.push(`127.0.0.1:${port}`);

  beforeAll(async () => {
    agent = await addAgent(s.server.ctx, { name: "hooked" });
    defaulted = await addAgent(s.server.ctx, { name: "hooked-by-config" });
  });
  afterAll(async () => {
    await receiver?.stop();
  });

  it("POSTs every status change, signed with the agent's secret, in order", async () => {
    const { plan } = await submitPlan(s.server.ctx, { agent, request: mergeRequest({ callbackUrl: receiver.url("/ordered") }) });
    await decide(s.server.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "slack" }, verdict: "approve" });
    await waitFor("two deliveries", () => receiver.statusesFor("/ordered").length >= 2);
    expect(receiver.statusesFor("/ordered")).toEqual(["pending", "approved"]);
    const approved = receiver.received.filter((r) => r.path === "/ordered")[1]!;
    const payload = JSON.parse(approved.body) as WebhookPayload;
    expect(payload).toMatchObject({ planId: plan.id, hash: plan.hash, status: "approved", approvals: [{ userId: "U0ALICE", via: "slack" }] });
    const header = approved.headers["countersign-signature"] as string;
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(await verifyWebhook(agent.webhookSecret, header, approved.body)).toBe(true);
    expect(await verifyWebhook(agent.webhookSecret, header, approved.body.replace("approved", "rejected"))).toBe(false);
    expect(await verifyWebhook("whsec_another", header, approved.body)).toBe(false);
    expect(await verifyWebhook(agent.webhookSecret, header, approved.body, { now: new Date(Date.now() + 10 * 60_000) })).toBe(false);
    expect(await verifyWebhook(agent.webhookSecret, header, approved.body, { now: new Date(Date.now() + 10 * 60_000), toleranceSec: 3600 })).toBe(true);
    expect(await verifyWebhook(agent.webhookSecret, undefined, approved.body)).toBe(false);
  });

  it("sends the reject reason", async () => {
    const { plan } = await submitPlan(s.server.ctx, { agent, request: mergeRequest({ callbackUrl: receiver.url("/rejected") }) });
    await decide(s.server.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0BOB", via: "web" }, verdict: "reject", reason: "wrong customer" });
    await waitFor("the rejection", () => receiver.statusesFor("/rejected").includes("rejected"));
    const last = receiver.received.filter((r) => r.path === "/rejected").at(-1)!;
    expect(JSON.parse(last.body)).toMatchObject({ status: "rejected", reason: "wrong customer" });
  });

  it("keeps retrying while the receiver fails, and delivers in order once it answers", async () => {
    receiver.answer = 500;
    const { plan } = await submitPlan(s.server.ctx, { agent, request: mergeRequest({ callbackUrl: receiver.url("/flaky") }) });
    await decide(s.server.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "slack" }, verdict: "approve" });
    await new Promise((r) => setTimeout(r, 300));
    expect(receiver.statusesFor("/flaky")).toEqual([]);
    receiver.answer = 200;
    await waitFor("both deliveries", () => receiver.statusesFor("/flaky").length >= 2);
    expect(receiver.statusesFor("/flaky")).toEqual(["pending", "approved"]);
  });

  it("while the receiver is unreachable nothing is lost: delivered once it is back", async () => {
    const away = new Receiver();
    await away.start();
    const port = away.port;
    await away.stop();
    allow(port);
    const { plan } = await submitPlan(s.server.ctx, { agent, request: mergeRequest({ callbackUrl: `http://127.0.0.1:${port}/back` }) });
    await new Promise((r) => setTimeout(r, 200)); // at least one attempt meets a closed port
    const back = new Receiver();
    await back.start(port);
    try {
      await waitFor("the delivery after the receiver returned", () => back.statusesFor("/back").includes("pending"));
      expect(JSON.parse(back.received[0]!.body).planId).toBe(plan.id);
    } finally {
      await back.stop();
    }
  });

  it("after repeated failure a delivery is dead-lettered and shown on the plan", async () => {
    const dead = new Receiver();
    await dead.start();
    const url = dead.url("/gone");
    await dead.stop();
    allow(dead.port);
    const { plan } = await submitPlan(s.server.ctx, { agent, request: mergeRequest({ callbackUrl: url }) });
    const reviewed = await waitFor("a dead letter", async () => {
      const r = await reviewPlan(s.server.ctx, { planId: plan.id, reader: { userId: "U0ALICE" } });
      return r.deadDeliveries.length > 0 && r;
    });
    expect(reviewed.deadDeliveries[0]).toMatchObject({ kind: "webhook" });
    expect(reviewed.deadDeliveries[0]!.error).toMatch(/webhook to 127\.0\.0\.1/);
  });

  it("uses the agent's callback from config when the plan names none", async () => {
    const { plan } = await submitPlan(s.server.ctx, {
      agent: defaulted,
      request: mergeRequest({ actions: [{ kind: "http.json", target: "crm", path: "/contacts/2", op: "merge", body: { email: "x@new.example" } }] }),
    });
    await waitFor("the delivery", () => receiver.statusesFor("/by-config").includes("pending"));
    const [first] = receiver.received.filter((r) => r.path === "/by-config");
    expect(JSON.parse(first!.body).planId).toBe(plan.id);
    expect(await verifyWebhook(defaulted.webhookSecret, first!.headers["countersign-signature"] as string, first!.body)).toBe(true);
  });

  it.each([
    "http://169.254.169.254/latest/meta-data",
    "http://localhost:1/hook",
    "https://evil.example/hook",
    "http://127.0.0.1:5432/",
    "http://127.0.0.1/hook",
  ])("refuses a callback to %s, a host and port not in config", async (callbackUrl) => {
    await expect(submitPlan(s.server.ctx, { agent, request: mergeRequest({ callbackUrl }) })).rejects.toMatchObject({
      code: "invalid_request",
      issues: [{ path: "/callbackUrl", message: expect.stringContaining("webhooks.allowedHosts") }],
    });
  });
});

/**
 * The allowlist as the running server reads it: a plan submitted while its callback was allowed
 * gets nothing from a server restarted with a config that no longer allows it, and the delivery
 * is dead, with the reason, on /lanes.
 */
describe.each(databaseKinds)("the webhook allowlist at delivery, across restarts, on $name", (kind) => {
  const ADMIN = "U0ADMIN";
  let database: Database;
  let target: JsonResourceServer;
  let server: RunningServer | undefined;
  let origin: string;
  let key: string;
  let agentName: string;
  const receiver = new Receiver();
  const other = new Receiver();

  /** Stops the running server, if any, and starts one on the same database that allows `allowedHosts`. */
  const restart = async (allowedHosts: string[]) => {
    await server?.close();
    server = undefined;
    const port = await freePort();
    origin = `http://127.0.0.1:${port}`;
    const config: Config = {
      ...testConfig({ crm: targetConfig(target.url) }),
      port,
      publicUrl: origin,
      admins: [ADMIN],
      webhooks: { allowedHosts, agents: {} },
    };
    server = await runServer({
      config,
      database,
      logger: silentLogger,
      grantKey: (await testGrantKeys()).signing,
      hostname: "127.0.0.1",
      sweepMs: 3_600_000,
      deliverMs: 50,
      delivery: { maxAttempts: 5, leaseMs: 10_000, backoffMs: () => 150 },
    });
    return server;
  };
  const submit = (callbackUrl: string, path = "/contacts/1") =>
    fetch(`${server!.url}/v1/plans`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(mergeRequest({ callbackUrl, actions: [{ kind: "http.json", target: "crm", path, op: "merge", body: { email: "x@new.example" } }] })),
    });
  const approve = (plan: { id: string; hash: string }) =>
    decide(server!.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" });
  /** /lanes as the admin sees it, signed in through a one-time link. */
  const lanesPage = async () => {
    const { url } = await createLoginLink(server!.ctx, { userId: ADMIN, via: "cli" });
    const signIn = await fetch(url, { method: "POST", redirect: "manual", headers: { origin } });
    expect(signIn.status).toBe(303);
    const cookie = `cs_session=${/cs_session=([^;]+)/.exec(signIn.headers.get("set-cookie") ?? "")?.[1]}`;
    const page = await fetch(`${origin}/lanes`, { headers: { cookie }, redirect: "manual" });
    expect(page.status).toBe(200);
    return page.text();
  };

  beforeAll(async () => {
    database = await kind.open();
    target = new JsonResourceServer({
      seed: { "/contacts/1": { id: 1, email: "a@old.example" }, "/contacts/2": { id: 2, email: "b@old.example" } },
      readTokens: [READ_TOKEN],
      writeToken: "unused-write-token",
    });
    await target.start();
    await receiver.start();
    await other.start();
    await restart([]);
    ({ key, name: agentName } = await addAgent(server!.ctx, { name: "moving-agent" }));
  });
  afterAll(async () => {
    await server?.close();
    await receiver.stop();
    await other.stop();
    await target?.stop();
    await database?.close();
  });

  it("a host removed from webhooks.allowedHosts gets nothing after a restart; the delivery is dead, naming the host:port and the key, on /lanes", async () => {
    await restart(["hooks.example.com", `127.0.0.1:${receiver.port}`]);
    const submitted = await submit(receiver.url("/removed"));
    expect(submitted.status).toBe(201);
    const plan = (await submitted.json()) as { id: string; hash: string };
    await waitFor("the webhook while the host is allowed", () => receiver.statusesFor("/removed").includes("pending"));

    await restart(["hooks.example.com"]);
    const hits = receiver.hits;
    await approve(plan);
    const why = `webhook not sent: 127.0.0.1:${receiver.port} is not in webhooks.allowedHosts (hooks.example.com)`;
    const page = await waitFor("the dead delivery on /lanes", async () => {
      const body = await lanesPage();
      return body.includes(why) && body;
    });
    expect(page).toMatch(new RegExp(`<tr data-lane="webhook:${agentName}">.*?class="dead">1<`, "s"));
    // Dead at its first attempt, not retried: the outbox does not come back to it.
    expect(page).toMatch(
      new RegExp(`plan\\.approved</td>\\s*<td data-label="Attempts">1</td>\\s*<td data-label="Last error">${why.replace(/[.()]/g, "\\$&")}<`),
    );
    await new Promise((r) => setTimeout(r, 300));
    expect(receiver.hits).toBe(hits);
    expect(receiver.statusesFor("/removed")).toEqual(["pending"]);
    const reviewed = await reviewPlan(server!.ctx, { planId: plan.id, reader: { userId: ADMIN } });
    expect(reviewed.deadDeliveries).toMatchObject([{ kind: "webhook", error: why }]);
  });

  it("a host:port entry admits that port only, at submit and at delivery", async () => {
    await restart([`127.0.0.1:${receiver.port}`]);
    const refused = await submit(other.url("/other-port"), "/contacts/2");
    expect(refused.status).toBe(400);
    const { error } = (await refused.json()) as { error: { code: string; issues: { path: string; message: string }[] } };
    expect(error.code).toBe("invalid_request");
    expect(error.issues).toEqual([
      {
        path: "/callbackUrl",
        message: `127.0.0.1:${other.port} is not in webhooks.allowedHosts (127.0.0.1:${receiver.port}): only other ports of its host are listed; list "127.0.0.1:${other.port}" to allow this one`,
      },
    ]);

    const submitted = await submit(receiver.url("/port"), "/contacts/2");
    expect(submitted.status).toBe(201);
    const plan = (await submitted.json()) as { id: string; hash: string };
    await waitFor("the webhook to the listed port", () => receiver.statusesFor("/port").includes("pending"));

    // The host stays listed, for another port and without one: neither admits the plan's port.
    await restart(["127.0.0.1", `127.0.0.1:${other.port}`]);
    const hits = receiver.hits;
    await approve(plan);
    const reviewed = await waitFor("the dead delivery", async () => {
      const r = await reviewPlan(server!.ctx, { planId: plan.id, reader: { userId: ADMIN } });
      return r.deadDeliveries.length > 0 && r;
    });
    expect(reviewed.deadDeliveries[0]!.error).toBe(
      `webhook not sent: 127.0.0.1:${receiver.port} is not in webhooks.allowedHosts (127.0.0.1, 127.0.0.1:${other.port}): only other ports of its host are listed, and an entry without a port allows only 80 for http; list "127.0.0.1:${receiver.port}" to allow this one`,
    );
    expect(receiver.hits).toBe(hits);
    expect(other.hits).toBe(0);
  });
});
