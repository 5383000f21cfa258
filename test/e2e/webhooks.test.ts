import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyWebhook, type WebhookPayload } from "../../src/client/index.ts";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import { decide } from "../../src/service/decide/decide.ts";
import { reviewPlan } from "../../src/service/review/review-plan.ts";
import { submitPlan } from "../../src/service/intake/submit-plan.ts";
import { databaseKinds } from "../support/databases.ts";
import { useServer } from "../support/use-harness.ts";
import { mergeRequest, targetConfig, testConfig } from "../support/harness.ts";
import { waitFor } from "../support/wait-for.ts";

/** An agent's webhook endpoint that records what it receives, and can fail or go away. */
class Receiver {
  received: { headers: IncomingHttpHeaders; body: string; path: string }[] = [];
  answer = 200;
  private server: Server | undefined;
  port = 0;
  async start(port = 0) {
    this.server = createServer((req, res) => {
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
        webhooks: { allowedHosts: ["127.0.0.1"], agents: { "hooked-by-config": { callbackUrl: `http://127.0.0.1:${receiver.port}/by-config` } } },
      };
    },
    run: { deliverMs: 50, delivery: { maxAttempts: 5, leaseMs: 10_000, backoffMs: () => 150 } },
  });
  let receiver: Receiver;
  let agent: { id: string; name: string; webhookSecret: string };
  let defaulted: { id: string; name: string; webhookSecret: string };

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

  it.each(["http://169.254.169.254/latest/meta-data", "http://localhost:1/hook", "https://evil.example/hook"])(
    "refuses a callback to %s, a host not in config",
    async (callbackUrl) => {
      await expect(submitPlan(s.server.ctx, { agent, request: mergeRequest({ callbackUrl }) })).rejects.toMatchObject({
        code: "invalid_request",
        issues: [{ path: "/callbackUrl", message: expect.stringContaining("webhooks.allowedHosts") }],
      });
    },
  );
});
