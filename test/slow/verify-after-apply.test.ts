import { rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Countersign } from "../../src/client/index.ts";
import type { Json } from "../../src/plan/json.ts";
import { createMcpServer } from "../../src/mcp/mcp-server.ts";
import { MASK } from "../../src/policy/redact.ts";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import { decide } from "../../src/service/decide/decide.ts";
import { createLoginLink } from "../../src/service/sign-in/login-links.ts";
import type { PlanView } from "../../src/service/lifecycle/plan-view.ts";
import { chromiumAvailable, launchChromium, screenshotPath } from "../support/chromium.ts";
import { databaseKinds } from "../support/databases.ts";
import { freePort } from "../support/free-port.ts";
import { targetConfig, testConfig } from "../support/harness.ts";
import { SlackEmulator } from "../support/slack-emulator.ts";
import { useServer } from "../support/use-harness.ts";
import { waitFor } from "../support/wait-for.ts";
import { spawnExecutor, writeExecutorConfig, type SpawnedExecutor } from "../support/executor-config-file.ts";

const EXECUTOR_TOKEN = "executor-token-verify-0123456789";
const REVIEW = "C0REVIEW";
const SECRET = "hunter2-never-shown";
/** One long unbroken value, to see the page's drift table wrap it at phone width. */
const BIO = `https://example.com/${"people/ana-lima/".repeat(12)}about`;

/**
 * A target that silently drops a field on write: the real server, the executor as
 * its own process, and a target that answers 200 to the PATCH but stores the contact without
 * two of the fields the plan set (one of them secret-named). The plan stays applied, and the
 * agent (MCP wait text and structured results, GET), its webhook, Slack and the browser page
 * all say plainly which fields did not land, with the secret masked everywhere.
 */
describe.each(databaseKinds)("verify after apply with a spawned executor on $name", (kind) => {
  const slack = new SlackEmulator({ teamId: "T0TEST" });
  const hooks: { body: string }[] = [];
  let hookServer: Server;
  let origin: string;
  let dir: string;
  // Registered before useServer's, so it runs after the server closed (hooks run last-in first-out).
  afterAll(async () => {
    hookServer?.closeAllConnections();
    await new Promise<void>((r) => (hookServer ? hookServer.close(() => r()) : r()));
    await slack.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  const s = useServer(kind, {
    seed: { "/contacts/1": { id: 1, email: "ana@old.example" } },
    config: async (targetUrl) => {
      await slack.start();
      hookServer = createServer((req, res) => {
        let body = "";
        req.on("data", (d: Buffer) => (body += d.toString()));
        req.on("end", () => {
          hooks.push({ body });
          res.writeHead(200).end();
        });
      });
      await new Promise<void>((r) => hookServer.listen(0, "127.0.0.1", r));
      const port = await freePort();
      origin = `http://127.0.0.1:${port}`;
      ({ dir } = writeExecutorConfig(targetUrl, { approvers: ["U0ALICE", "U0BOB"], prefix: "countersign-verify-" }));
      return {
        ...testConfig({ crm: targetConfig(targetUrl) }),
        port,
        publicUrl: origin,
        executorToken: EXECUTOR_TOKEN,
        webhooks: { allowedHosts: [`127.0.0.1:${(hookServer.address() as AddressInfo).port}`], agents: {} },
        slack: {
          enabled: true as const,
          botToken: slack.botToken,
          signingSecret: "slack-signing-secret-verify",
          appToken: undefined,
          apiUrl: slack.url,
          reviewChannel: REVIEW,
        },
      };
    },
    run: { hostname: "127.0.0.1", deliverMs: 50, sweepMs: 3_600_000 },
  });
  let executor: SpawnedExecutor;
  let mcp: Client;
  let agentKey: string;

  beforeAll(async () => {
    executor = await spawnExecutor({ dir, serverUrl: s.server.url, executorToken: EXECUTOR_TOKEN });
    agentKey = (await addAgent(s.server.ctx, { name: "verify-agent" })).key;
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await createMcpServer(new Countersign({ url: s.server.url, key: agentKey }), "0.0.0-test").connect(serverSide);
    mcp = new Client({ name: "verify-test", version: "1.0.0" });
    await mcp.connect(clientSide);
  }, 180_000);

  afterAll(async () => {
    await mcp?.close();
    await executor?.stop();
  });

  it("a target that silently drops fields on write: applied, verified false with the paths, told to everyone, the secret masked", async () => {
    // The target accepts the PATCH, then keeps only the fields it knows.
    s.target.beforeAnswer = (req) => {
      if (req.method !== "PATCH" || req.path !== "/contacts/1") return;
      const { nickname: _n, recoveryPassword: _p, bio: _b, ...kept } = s.target.get("/contacts/1") as Record<string, Json>;
      s.target.set("/contacts/1", kept);
    };
    const call = async (name: string, args: Record<string, unknown>) =>
      (await mcp.callTool({ name, arguments: args }, undefined, { timeout: 200_000 })) as CallToolResult;
    const proposed = await call("propose_plan", {
      title: "Update Ana's contact",
      onBehalfOf: "U0REQUESTER",
      callbackUrl: `http://127.0.0.1:${(hookServer.address() as AddressInfo).port}/hook`,
      actions: [
        {
          kind: "http.json",
          target: "crm",
          path: "/contacts/1",
          op: "merge",
          body: { email: "ana@new.example", nickname: "Aninha", recoveryPassword: SECRET, bio: BIO },
        },
      ],
    });
    expect(proposed.isError).toBeFalsy();
    const { id: planId, hash } = proposed.structuredContent as { id: string; hash: string };
    await decide(s.server.ctx, { planId, hash, actor: { userId: "U0ALICE", via: "slack" }, verdict: "approve" });

    // The agent: wait_for_outcome's text and structured results.
    const waited = await call("wait_for_outcome", { planId, timeoutSeconds: 180 });
    const text = waited.content.map((c) => (c.type === "text" ? c.text : "")).join("\n");
    expect(text).toContain(`Plan ${planId}: applied`);
    expect(text).toContain("But 1 write(s) did not land as approved");
    expect(text).toContain("0. crm /contacts/1: applied, NOT as previewed: the target, re-read after the write, differs");
    expect(text).toContain('/nickname: approved "Aninha", target has (absent)');
    expect(text).toContain(`/recoveryPassword: approved ${JSON.stringify(MASK)}, target has (absent)`);
    const drift = [
      { path: "/nickname", expected: "Aninha" },
      { path: "/recoveryPassword", expected: MASK },
      { path: "/bio", expected: BIO },
    ];
    expect((waited.structuredContent as { results: unknown[] }).results).toStrictEqual([
      { index: 0, target: "crm", path: "/contacts/1", status: "applied", verified: false, driftAfterApply: drift },
    ]);
    expect(s.target.get("/contacts/1")).toStrictEqual({ id: 1, email: "ana@new.example" });
    expect(s.target.writes()).toHaveLength(1);

    // The agent's GET, and its webhook for `applied`.
    const got = (await (await fetch(`${s.server.url}/v1/plans/${planId}`, { headers: { authorization: `Bearer ${agentKey}` } })).json()) as PlanView;
    expect(got.status).toBe("applied");
    expect(got.outcome?.actions).toStrictEqual([{ index: 0, target: "crm", path: "/contacts/1", status: "applied", verified: false, driftAfterApply: drift }]);
    // The audit trail keeps it too (it outlives a purged outcome).
    const { events } = (await (await fetch(`${s.server.url}/v1/plans/${planId}/events`, { headers: { authorization: `Bearer ${agentKey}` } })).json()) as {
      events: { type: string; data: { actions?: unknown } }[];
    };
    expect(events.find((e) => e.type === "plan.applied")?.data.actions).toStrictEqual([{ index: 0, status: "applied", verified: false }]);
    const hook = await waitFor(
      "the applied webhook",
      () => hooks.map((h) => JSON.parse(h.body) as { status: string; outcome?: PlanView["outcome"] }).find((h) => h.status === "applied"),
      60_000,
    );
    expect(hook.outcome?.actions).toStrictEqual([{ index: 0, target: "crm", path: "/contacts/1", status: "applied", verified: false, driftAfterApply: drift }]);

    // Slack: the preview's status line and the thread's reply.
    const preview = await waitFor(
      "the preview updated to applied",
      () => slack.messagesIn(REVIEW).find((m) => (m.text ?? "").length > 0 && JSON.stringify(m.blocks).includes("Applied, not as previewed")),
      60_000,
    );
    // Alone, or coalesced after "executing" when both were queued together (then its line is in the blocks).
    const reply = await waitFor(
      "the applied reply",
      () => slack.thread(REVIEW, preview.ts).find((r) => JSON.stringify(r.blocks).includes("Applied ⚠️")),
      60_000,
    );
    const replyText = JSON.stringify(reply.blocks);
    // Alone it is the applied line; coalesced with whatever transitions were still queued with it
    // (executing, and on a loaded machine the approval too) it is their chain, ending in this one.
    const alone = "Applied ⚠️ — 1 action written, but 1 write did not land as approved: the target, re-read after the write, differs from what was approved";
    expect(reply.text === alone || /^(?:[^→]+ → )+applied, not as approved$/.test(reply.text ?? ""), `reply text: ${reply.text}`).toBe(true);
    expect(replyText).toContain("Applied ⚠️ — 1 action written, but 1 write did not land as approved");
    expect(replyText).toContain("re-read after the write (approved → target has)");
    expect(replyText).toContain('• `/nickname`: `\\"Aninha\\"` → _absent_');
    expect(replyText).toContain('`/recoveryPassword`: `\\"•••••• (secret)\\"` → _absent_');
    expect(replyText).toContain("applied, ⚠️ not as previewed");

    // The browser page.
    const { url } = await createLoginLink(s.server.ctx, { userId: "U0ALICE", via: "cli" });
    const signIn = await fetch(url, { method: "POST", redirect: "manual", headers: { origin } });
    const cookie = `cs_session=${/cs_session=([^;]+)/.exec(signIn.headers.get("set-cookie") ?? "")?.[1]}`;
    const page = await (await fetch(`${origin}/plans/${planId}`, { headers: { cookie } })).text();
    expect(page).toContain("1 write not as previewed");
    expect(page).toContain('data-verified="false"');
    expect(page).toMatch(/<td data-label="Field">\/nickname<\/td><td class="after" data-label="Approved">[^<]*&quot;Aninha&quot;/);

    // In Chromium: the drift table is on the page, and nothing scrolls sideways at desktop or phone width.
    if (chromiumAvailable) {
      const browser = await launchChromium();
      try {
        for (const [size, viewport] of Object.entries({ desktop: { width: 1280, height: 900 }, phone: { width: 390, height: 844 } })) {
          const context = await browser.newContext({ viewport });
          await context.addCookies([{ name: "cs_session", value: cookie.slice("cs_session=".length), url: origin }]);
          const tab = await context.newPage();
          await tab.goto(`${origin}/plans/${planId}`);
          const table = tab.locator(".drift-after-apply table");
          await table.waitFor();
          expect(await table.locator("tbody tr").count()).toBe(3);
          const [scrollWidth, innerWidth] = (await tab.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")) as [number, number];
          expect(scrollWidth, `drift table at ${size}`).toBeLessThanOrEqual(innerWidth);
          await tab.locator("section[aria-labelledby=outcome]").screenshot({ path: screenshotPath(`verify-after-apply-${kind.name}-${size}`) });
          await context.close();
        }
      } finally {
        await browser.close();
      }
    }

    // The secret the plan set appears nowhere a person or the agent reads.
    for (const shown of [text, JSON.stringify(waited.structuredContent), JSON.stringify(hooks), JSON.stringify(slack.messagesIn(REVIEW)), page])
      expect(shown).not.toContain(SECRET);
  }, 240_000);
});
