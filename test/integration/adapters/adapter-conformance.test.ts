import { describe, expect, it } from "vitest";
import { httpJsonAdapter } from "../../../src/adapters/http-json-adapter.ts";
import { postgresRowAdapter } from "../../../src/adapters/postgres-row/postgres-row-adapter.ts";
import { PostgresRowTarget, type PostgresRowAction } from "../../../src/plan/postgres-row-schema.ts";
import { AdapterRegistry } from "../../../src/adapters/registry.ts";
import { TargetConfig } from "../../../src/config/schema.ts";
import { JsonResourceServer } from "../../../src/demo/json-resource-server.ts";
import type { HttpJsonAction } from "../../../src/plan/schema.ts";
import { describeAdapterConformance } from "../../support/adapter-conformance.ts";
import { openRowDatabase } from "../../support/adapters-postgres.ts";
import { waitFor } from "../../support/wait-for.ts";
import { postgresKind } from "../../support/databases.ts";

describe("adapter registry", () => {
  it("finds adapters by kind and names the known kinds for an unknown one", () => {
    const registry = new AdapterRegistry([httpJsonAdapter(), postgresRowAdapter()]);
    expect(registry.find("postgres.row").kind).toBe("postgres.row");
    expect(registry.kinds()).toEqual(["http.json", "postgres.row"]);
    expect(() => registry.find("mysql.row")).toThrow("no adapter of kind 'mysql.row'; known kinds: 'http.json', 'postgres.row'");
    expect(() => registry.register(httpJsonAdapter())).toThrow("adapter 'http.json' is registered twice");
  });
});

describeAdapterConformance("http.json on a JSON resource server", async () => {
  const path = "/contacts/42";
  const seed = { name: "Ada", email: "ada@example.com" };
  const server = new JsonResourceServer({ seed: { [path]: seed }, readTokens: ["read-token"], writeToken: "write-token" });
  const url = await server.start();
  const config = (baseUrl: string) =>
    TargetConfig.parse({
      adapter: "http.json",
      baseUrl,
      read: { headers: { authorization: "Bearer read-token" } },
      write: { headers: { authorization: "Bearer write-token" } },
      allow: { ops: ["merge"], paths: ["/contacts/*"] },
      timeoutMs: 10_000,
    });
  const action: import("zod").output<typeof HttpJsonAction> = { kind: "http.json", target: "crm", path, op: "merge", body: { email: "ada@lovelace.example" } };
  return {
    adapter: httpJsonAdapter(),
    name: "crm",
    target: config(url),
    unreachable: config("http://127.0.0.1:1"),
    action,
    reset: async () => server.set(path, seed),
    async writeWithReadCredential() {
      const response = await fetch(`${url}${path}`, {
        method: "PATCH",
        headers: { authorization: "Bearer read-token", "content-type": "application/merge-patch+json" },
        body: "{}",
      });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
    },
    concurrentWrite: async () => server.set(path, { ...seed, name: "Ada Lovelace" }),
    async holdWrites() {
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let arrived = false;
      server.beforeHandle = async (request) => {
        if (request.method === "GET") return;
        arrived = true;
        await released;
      };
      return {
        arrived: async () => arrived,
        release: async () => {
          server.beforeHandle = undefined;
          release();
          // The held write lands now, its client gone: wait until the target has answered it.
          await waitFor("the held write to be answered", () => server.writes().every((r) => r.answered !== undefined));
        },
      };
    },
    writes: async () => server.writes().filter((r) => r.answered !== undefined && r.answered < 300).length,
    close: () => server.stop(),
  };
});

const adminUrl = process.env.TEST_DATABASE_URL;
describe.skipIf(!postgresKind || !adminUrl)("on PostgreSQL", () => {
  describeAdapterConformance("postgres.row with a SELECT-only read role", async () => {
    const db = await openRowDatabase(adminUrl!);
    const config = (readUrl: string) =>
      PostgresRowTarget.parse({
        adapter: "postgres.row",
        read: { url: readUrl },
        write: { url: db.writeUrl },
        tables: { contacts: { key: ["id"], version: "updated_at" } },
        allow: { ops: ["update"], tables: ["contacts"] },
        timeoutMs: 10_000,
      });
    const action: PostgresRowAction = {
      kind: "postgres.row",
      target: "crmdb",
      table: "contacts",
      key: { id: 42 },
      op: "update",
      values: { email: "ada@lovelace.example" },
    };
    const reader = (await import("postgres")).default(db.readUrl, { onnotice: () => {}, max: 1 });
    return {
      adapter: postgresRowAdapter(),
      name: "crmdb",
      target: config(db.readUrl),
      unreachable: config("postgres://nobody@127.0.0.1:1/nothing"),
      action,
      async reset() {
        await db.admin`DELETE FROM contacts`;
        await db.admin`INSERT INTO contacts (id, name, email) VALUES (42, 'Ada', 'ada@example.com')`;
      },
      writeWithReadCredential: () => reader`UPDATE contacts SET name = 'x' WHERE id = 42`,
      concurrentWrite: async () => void (await db.admin`UPDATE contacts SET name = 'Ada Lovelace', updated_at = clock_timestamp() WHERE id = 42`),
      async holdWrites() {
        const locker = await db.admin.reserve();
        await locker`BEGIN`;
        await locker`SELECT 1 FROM contacts WHERE id = 42 FOR UPDATE`;
        return {
          async arrived() {
            const [row] = await db.admin`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`;
            return row!.n > 0;
          },
          async release() {
            await locker`ROLLBACK`;
            locker.release();
          },
        };
      },
      writes: db.writes,
      async close() {
        await reader.end({ timeout: 5 });
        await db.close();
      },
    };
  });
});
