import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Countersign, CountersignError, RateLimitedError } from "../../src/client/index.ts";
import { createMcpServer } from "../../src/mcp/mcp-server.ts";
import { openApiDocument } from "../../src/server/openapi.ts";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import { pglite } from "../support/databases.ts";
import { mergeRequest, targetConfig, testConfig } from "../support/harness.ts";
import { useServer } from "../support/use-harness.ts";

/** Agent limits over real HTTP: the 429 answer, the client's typed error and the MCP tool's words. */
describe("agent limits over HTTP", () => {
  const s = useServer(pglite, {
    config: (url) => ({
      ...testConfig({ crm: targetConfig(url) }),
      limits: {
        plansPerMinute: 60,
        maxPending: 100,
        agents: { "http-bot": { plansPerMinute: 1 }, "client-bot": { maxPending: 1 }, "mcp-bot": { plansPerMinute: 1 } },
      },
    }),
  });
  const keys: Record<string, string> = {};
  beforeAll(async () => {
    for (const name of ["http-bot", "client-bot", "mcp-bot"]) keys[name] = (await addAgent(s.server.ctx, { name })).key;
  });

  const post = (key: string, body: unknown) =>
    fetch(`${s.server.url}/v1/plans`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  it("answers 429 rate_limited with Retry-After and a message naming the limit, and reads no target for it", async () => {
    expect((await post(keys["http-bot"]!, mergeRequest({ title: "first" }))).status).toBe(201);
    const reads = s.target.requests.length;
    const res = await post(keys["http-bot"]!, mergeRequest({ title: "second" }));
    expect(res.status).toBe(429);
    const retryAfter = res.headers.get("retry-after");
    expect(retryAfter).toMatch(/^\d+$/);
    // The first plan leaves the minute within 60 s of now, however slow this machine was.
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Number(retryAfter)).toBeLessThanOrEqual(60);
    const body = (await res.json()) as { error: { code: string; message: string; details: Record<string, unknown> } };
    expect(body.error).toEqual({
      code: "rate_limited",
      message: `agent http-bot submitted 1 plans in the last minute; limits.agents.http-bot.plansPerMinute is 1. Retry after ${retryAfter} s.`,
      details: { retryAfterSeconds: Number(retryAfter), limit: "limits.agents.http-bot.plansPerMinute", value: 1 },
    });
    expect(s.target.requests.length).toBe(reads);
  });

  it("is documented: POST /v1/plans answers 429 with a Retry-After header", () => {
    const doc = openApiDocument("http://x") as {
      paths: Record<string, { post?: { responses: Record<string, { description: string; headers?: Record<string, unknown> }> } }>;
    };
    const tooMany = doc.paths["/v1/plans"]!.post!.responses["429"]!;
    expect(tooMany.description).toContain("`rate_limited`");
    expect(tooMany.headers).toEqual({ "Retry-After": { description: expect.any(String), schema: { type: "integer", minimum: 1 } } });
  });

  it("the client throws RateLimitedError carrying retryAfterSeconds and the refusing key", async () => {
    const client = new Countersign({ url: s.server.url, key: keys["client-bot"]! });
    await client.submitPlan(mergeRequest({ title: "the one open plan" }) as never);
    const err = await client.submitPlan(mergeRequest({ title: "a second" }) as never).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitedError);
    expect(err).toBeInstanceOf(CountersignError);
    expect(err).toMatchObject({ code: "rate_limited", status: 429, retryAfterSeconds: 30, limit: "limits.agents.client-bot.maxPending" });
    expect((err as Error).message).toBe("agent client-bot has 1 plans pending or approved; limits.agents.client-bot.maxPending is 1. Retry after 30 s.");
  });

  describe("the MCP tool", () => {
    let mcp: Client;
    beforeAll(async () => {
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
      await createMcpServer(new Countersign({ url: s.server.url, key: keys["mcp-bot"]! }), "0.0.0-test").connect(serverSide);
      mcp = new Client({ name: "limits-test", version: "1.0.0" });
      await mcp.connect(clientSide);
    });
    afterAll(async () => {
      await mcp?.close();
    });

    it("says propose_plan is rate limited, that nothing was created, and when to retry", async () => {
      const propose = async (title: string) => (await mcp.callTool({ name: "propose_plan", arguments: mergeRequest({ title }) })) as CallToolResult;
      expect((await propose("first")).isError).toBeFalsy();
      const limited = await propose("second");
      expect(limited.isError).toBe(true);
      const text = (limited.content[0] as { text: string }).text;
      expect(text).toMatch(
        /^rate_limited: agent mcp-bot submitted 1 plans in the last minute; limits\.agents\.mcp-bot\.plansPerMinute is 1\. Retry after (\d+) s\. Nothing was created\. Wait \1 s \(until \d{4}-\d\d-\d\dT[\d:.]+Z\), then call propose_plan again/,
      );
      const seconds = Number(/Wait (\d+) s/.exec(text)![1]);
      expect(limited.structuredContent).toEqual({
        error: {
          code: "rate_limited",
          message: expect.any(String),
          retryAfterSeconds: seconds,
          retryAt: expect.any(String),
          limit: "limits.agents.mcp-bot.plansPerMinute",
        },
      });
    });
  });
});
