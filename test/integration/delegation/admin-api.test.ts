import { describe, expect, it } from "vitest";
import { createApp } from "../../../src/server/app.ts";
import { pglite } from "../../support/databases.ts";
import { useHarness } from "../../support/use-harness.ts";

const TOKEN = "admin-token-for-delegations-0123456789";

/** `countersign delegate` against a server holding the embedded data dir goes through these routes (src/cli/delegate.ts). */
describe("/admin/delegations", () => {
  const h = useHarness(pglite);
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await createApp(h.ctx, { adminToken: TOKEN }).request(`/admin${path}`, {
      method,
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  };

  it("makes, lists and ends a delegation as the CLI's admin, and refuses a bad one saying why", async () => {
    const made = await call("POST", "/delegations", { delegator: "U0ALICE", delegate: "U0BOB", until: "2026-12-20", by: "ana" });
    expect(made.status).toBe(201);
    expect(made.json).toMatchObject({ delegator: "U0ALICE", delegate: "U0BOB", createdBy: "cli:ana", timeZone: "UTC", active: true });
    const listed = await call("GET", "/delegations");
    expect((listed.json.delegations as { id: string }[]).map((d) => d.id)).toEqual([made.json.id]);
    const ended = await call("POST", `/delegations/${String(made.json.id)}/end`, { by: "ana" });
    expect(ended.status).toBe(200);
    expect(ended.json).toMatchObject({ active: false, endedBy: "cli:ana" });
    expect(((await call("GET", "/delegations")).json.delegations as unknown[]).length).toBe(0);
    expect(((await call("GET", "/delegations?ended=1")).json.delegations as unknown[]).length).toBe(1);

    const self = await call("POST", "/delegations", { delegator: "U0ALICE", delegate: "U0ALICE", until: "2026-12-20", by: "ana" });
    expect(self.status).toBe(400);
    expect(self.json).toMatchObject({ error: { code: "invalid_request", message: expect.stringContaining("cannot delegate to yourself") } });
    const extra = await call("POST", "/delegations", { delegator: "U0ALICE", delegate: "U0BOB", until: "2026-12-20", by: "ana", admin: true });
    expect(extra.status).toBe(400);
  });
});
