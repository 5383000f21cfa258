import { Writable } from "node:stream";
import { beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../../src/logging/logger.ts";
import { addAgent } from "../../../src/service/agents/add-agent.ts";
import { createApp } from "../../../src/server/app.ts";
import { pglite } from "../../support/databases.ts";
import { mergeRequest } from "../../support/harness.ts";
import { useHarness } from "../../support/use-harness.ts";

/** A plan submit writes one log line, the request's, and it names the plan (src/http/request-id.ts). */
describe("the request's line is a submit's only line", () => {
  const h = useHarness(pglite);
  const lines: Record<string, unknown>[] = [];
  let app: ReturnType<typeof createApp>;
  let key: string;

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(
          ...String(chunk)
            .trim()
            .split("\n")
            .map((l) => JSON.parse(l) as Record<string, unknown>),
        );
        done();
      },
    });
    app = createApp({ ...h.ctx, logger: createLogger("info", sink) });
    key = (await addAgent(h.ctx, { name: "one-line-agent" })).key;
  });

  const submit = (body: Record<string, unknown>) =>
    app.request("/v1/plans", {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "x-request-id": `submit-${lines.length}` },
      body: JSON.stringify(body),
    });

  it("names the plan, its hash, agent and action count on the request line, and writes nothing else", async () => {
    const request = mergeRequest({ title: "one line please", idempotencyKey: "one-line-1" });
    const res = await submit(request);
    expect(res.status).toBe(201);
    const plan = (await res.json()) as { id: string; hash: string };
    const requestId = res.headers.get("x-request-id");
    expect(lines).toEqual([
      expect.objectContaining({
        msg: "request",
        requestId,
        method: "POST",
        path: "/v1/plans",
        status: 201,
        planId: plan.id,
        hash: plan.hash,
        agent: "one-line-agent",
        actions: 1,
        created: true,
      }),
    ]);

    const again = await submit(request);
    expect(again.status).toBe(200);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatchObject({ msg: "request", status: 200, planId: plan.id, created: false });
  });
});
