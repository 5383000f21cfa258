import { networkInterfaces } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runServer } from "../../src/server/run-server.ts";
import type { Database } from "../../src/store/db.ts";
import { pglite } from "../support/databases.ts";
import { silentLogger, testConfig, testGrantKeys } from "../support/harness.ts";

/** An address of this machine that is not loopback, if it has one: where a neighbour would connect. */
const outward = Object.values(networkInterfaces())
  .flat()
  .find((i) => i?.family === "IPv4" && !i.internal)?.address;

describe("the interface the server listens on (HOST)", () => {
  let database: Database;
  beforeAll(async () => {
    database = await pglite.open();
  });
  afterAll(async () => {
    await database?.close();
  });

  const serveWith = async (host: string) =>
    runServer({ config: { ...testConfig({}), host }, logger: silentLogger, database, grantKey: (await testGrantKeys()).signing, sweepMs: 3_600_000 });

  it("HOST=127.0.0.1: reachable on loopback, not from this machine's other addresses", async () => {
    const server = await serveWith("127.0.0.1");
    try {
      expect(server.url).toBe(`http://127.0.0.1:${server.port}`);
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
      if (outward) await expect(fetch(`http://${outward}:${server.port}/healthz`)).rejects.toThrow();
    } finally {
      await server.close();
    }
  });

  it("HOST=0.0.0.0 (serve's default): reachable on every interface, and the server's own URL is loopback", async () => {
    const server = await serveWith("0.0.0.0");
    try {
      expect(server.url).toBe(`http://127.0.0.1:${server.port}`);
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
      if (outward) expect((await fetch(`http://${outward}:${server.port}/healthz`)).status).toBe(200);
    } finally {
      await server.close();
    }
  });
});
