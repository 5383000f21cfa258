import { afterAll, describe, expect, it } from "vitest";
import { GrantKeys, MAX_CLAIM_KIDS } from "../../src/contract/executor-api.ts";
import { publicKeyFingerprint } from "../../src/grant/keys.ts";
import { runServer } from "../../src/server/run-server.ts";
import { pglite } from "../support/databases.ts";
import { useServer } from "../support/use-harness.ts";
import { silentLogger, testConfig, testGrantKeys } from "../support/harness.ts";

const TOKEN = "executor-token-0123456789abcdef";

describe("executor API: authentication and refusals", () => {
  const s = useServer(pglite, { config: () => ({ ...testConfig({}), executorToken: TOKEN }) });
  const post = (path: string, init: { token?: string | null; body?: string } = {}) =>
    fetch(`${s.server.url}/v1/executor${path}`, {
      method: "POST",
      headers: { ...(init.token === null ? {} : { authorization: `Bearer ${init.token ?? TOKEN}` }), "content-type": "application/json" },
      ...(init.body !== undefined ? { body: init.body } : {}),
    });
  const code = async (res: Response) => ((await res.json()) as { error: { code: string } }).error.code;

  afterAll(async () => {});

  it("refuses a missing or wrong token", async () => {
    for (const token of [null, "wrong-token-0123456789abcdef", `${TOKEN}x`]) {
      const res = await post("/claim?wait=0", { token });
      expect(res.status).toBe(401);
      expect(await code(res)).toBe("unauthorized");
    }
  });

  it("GET /keys answers the server's grant key (id and fingerprint) as the contract says, and only with the executor token", async () => {
    for (const token of [null, "wrong-token-0123456789abcdef"]) {
      const res = await fetch(`${s.server.url}/v1/executor/keys`, { headers: token === null ? {} : { authorization: `Bearer ${token}` } });
      expect(res.status).toBe(401);
      expect(await code(res)).toBe("unauthorized");
    }
    const res = await fetch(`${s.server.url}/v1/executor/keys`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
    const keys = GrantKeys.parse(await res.json());
    const { signing } = await testGrantKeys();
    expect(keys).toEqual({ keys: [{ kid: signing.kid, fingerprint: publicKeyFingerprint(signing.key) }] });
  });

  it("refuses a claim naming a key id that is not one, or too many", async () => {
    for (const query of ["kid=not-a-kid", Array.from({ length: MAX_CLAIM_KIDS + 1 }, () => `kid=${"a".repeat(43)}`).join("&")]) {
      const res = await post(`/claim?wait=0&${query}`);
      expect(res.status).toBe(400);
      expect(await code(res)).toBe("invalid_request");
    }
    expect((await post(`/claim?wait=0&kid=${(await testGrantKeys()).signing.kid}`)).status).toBe(204);
  });

  it("answers 204 when there is nothing to claim", async () => {
    expect((await post("/claim?wait=0")).status).toBe(204);
  });

  it("refuses a wait outside 0–25 s", async () => {
    const res = await post("/claim?wait=26");
    expect(res.status).toBe(400);
    expect(await code(res)).toBe("invalid_request");
  });

  it("refuses heartbeats and reports under a token that holds no claim (409 lease_lost)", async () => {
    const heartbeat = await post("/claims/not-a-claim/heartbeat");
    expect(heartbeat.status).toBe(409);
    expect(await code(heartbeat)).toBe("lease_lost");
    const report = await post("/claims/not-a-claim/report", { body: JSON.stringify({ status: "applied", actions: [] }) });
    expect(report.status).toBe(409);
    expect(await code(report)).toBe("lease_lost");
  });

  it("refuses a malformed outcome before looking at the claim", async () => {
    const res = await post("/claims/not-a-claim/report", { body: JSON.stringify({ status: "done", actions: [] }) });
    expect(res.status).toBe(400);
    expect(await code(res)).toBe("invalid_request");
    const bad = await post("/claims/not-a-claim/report", { body: "{nope" });
    expect(bad.status).toBe(400);
    expect(await code(bad)).toBe("invalid_json");
  });

  it("is off when the server has no executor token", async () => {
    const other = await runServer({ config: testConfig({}), logger: silentLogger, database: s.database, grantKey: (await testGrantKeys()).signing });
    try {
      const res = await fetch(`${other.url}/v1/executor/claim?wait=0`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}` } });
      expect(res.status).toBe(401);
      expect(((await res.json()) as { error: { message: string } }).error.message).toContain("COUNTERSIGN_EXECUTOR_TOKEN");
    } finally {
      await other.close();
    }
  });
});
