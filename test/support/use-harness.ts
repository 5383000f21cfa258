import { afterAll, beforeAll } from "vitest";
import type { Config } from "../../src/config/load.ts";
import type { Json } from "../../src/plan/json.ts";
import { JsonResourceServer } from "../../src/demo/json-resource-server.ts";
import { runServer, type RunningServer, type RunServerOptions } from "../../src/server/run-server.ts";
import type { Database } from "../../src/store/db.ts";
import type { TestDatabaseKind } from "./databases.ts";
import { openHarness, READ_TOKEN, silentLogger, targetConfig, testConfig, testGrantKeys, WRITE_TOKEN, type Harness } from "./harness.ts";

export type HarnessOptions = NonNullable<Parameters<typeof openHarness>[1]>;

/**
 * A value a suite's beforeAll fills in: tests read its fields, and a read before that hook ran
 * fails naming what was read, instead of an "undefined" far from the cause.
 */
function later<T extends object>(what: string, value: () => T | undefined): T {
  return new Proxy({} as T, {
    get(_, prop) {
      const current = value();
      if (!current) throw new Error(`${what}.${String(prop)} was read before the suite's beforeAll opened it`);
      const field = Reflect.get(current, prop, current) as unknown;
      return typeof field === "function" ? (field as (...args: unknown[]) => unknown).bind(current) : field;
    },
  });
}

/** A harness as tests use it; the suite that opened it closes it. */
export type HarnessView = Omit<Harness, "close">;

export interface SuiteHarness extends HarnessView {
  database: Database;
  /** Another harness (own config, clock, target and agent) on the same database, opened and closed with this one. */
  another(options: HarnessOptions): HarnessView;
}

/**
 * One migrated database of `kind` and a service harness on it (see openHarness), opened in the
 * enclosing suite's beforeAll and closed in its afterAll.
 */
export function useHarness(kind: TestDatabaseKind, options: HarnessOptions = {}): SuiteHarness {
  let database: Database | undefined;
  const opened: Harness[] = [];
  const wanted: HarnessOptions[] = [options];
  beforeAll(async () => {
    database = await kind.open();
    for (const each of wanted) opened.push(await openHarness(database, each));
  });
  afterAll(async () => {
    for (const h of opened.splice(0).reverse()) await h.close();
    await database?.close();
    database = undefined;
  });
  const first = later("useHarness()", () => opened[0]);
  return {
    get database() {
      if (!database) throw new Error("useHarness().database was read before the suite's beforeAll opened it");
      return database;
    },
    get ctx() {
      return first.ctx;
    },
    get clock() {
      return first.clock;
    },
    get target() {
      return first.target;
    },
    get agent() {
      return first.agent;
    },
    another(more) {
      const index = wanted.push(more) - 1;
      return later(`useHarness().another(${index})`, () => opened[index]);
    },
  };
}

export interface ServerOptions {
  /** The target's documents; contacts 1 and 2 when not given. */
  seed?: Record<string, Json>;
  /** The server's config given the target's URL; one "crm" target on it when not given. */
  config?: (targetUrl: string) => Config | Promise<Config>;
  /** Anything else runServer takes (clock, sweepMs, hostname, outboxHandlers …). */
  run?: Partial<Omit<RunServerOptions, "config" | "database">>;
}

export interface SuiteServer {
  database: Database;
  target: JsonResourceServer;
  server: RunningServer;
}

/**
 * One migrated database of `kind`, a real target that records every request, and the whole
 * server (runServer) on a free port, opened in the enclosing suite's beforeAll and closed in its
 * afterAll. Verbs run in `server.server.ctx`, the context the HTTP doors use.
 */
export function useServer(kind: TestDatabaseKind, options: ServerOptions = {}): SuiteServer {
  let opened: SuiteServer | undefined;
  beforeAll(async () => {
    const database = await kind.open();
    const target = new JsonResourceServer({
      seed: options.seed ?? {
        "/contacts/1": { id: 1, name: "Ana Lima", email: "ana@old.example" },
        "/contacts/2": { id: 2, name: "Bruno Costa", email: "bruno@example.com" },
      },
      readTokens: [READ_TOKEN],
      writeToken: WRITE_TOKEN,
    });
    await target.start();
    const config = (await options.config?.(target.url)) ?? testConfig({ crm: targetConfig(target.url) });
    // Assigned before runServer so a failed start still closes the database and the target.
    opened = { database, target, server: undefined as never };
    opened.server = await runServer({ logger: silentLogger, grantKey: (await testGrantKeys()).signing, ...options.run, config, database });
  });
  afterAll(async () => {
    await opened?.server?.close();
    await opened?.target.stop();
    await opened?.database.close();
    opened = undefined;
  });
  return later("useServer()", () => opened);
}
