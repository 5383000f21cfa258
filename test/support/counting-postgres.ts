import { randomBytes } from "node:crypto";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { openDatabase, type Database, type Db } from "../../src/store/db.ts";
import { namedStatements, PLAN_CACHE } from "../../src/store/named-statements.ts";
import * as schema from "../../src/store/schema.ts";

/**
 * A migrated PostgreSQL database whose every statement is recorded as the driver sends it,
 * BEGIN and COMMIT included: what the server parses and plans, which is the cost that
 * statements-per-plan counts. Built like store/db.ts's PostgreSQL database, on a postgres.js
 * client with its `debug` hook (called once per statement sent), so the verbs run unchanged.
 */
export interface CountingPostgres extends Database {
  /** Every statement sent since the last `take()`, in order. */
  take(): string[];
}

export async function openCountingPostgres(adminUrl: string): Promise<CountingPostgres> {
  const admin = postgres(adminUrl, { onnotice: () => {}, max: 1 });
  const name = `cs_count_${randomBytes(6).toString("hex")}`;
  await admin.unsafe(`CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const migrating = await openDatabase({ kind: "postgres", url: url.toString() });
  await migrating.migrate();
  const listening = migrating; // LISTEN runs on its own connection; its statements are not the verbs'.

  let sent: string[] = [];
  const client = postgres(url.toString(), {
    onnotice: () => {},
    max: 10,
    connection: PLAN_CACHE,
    debug: (_connection, query) => void sent.push(query.replace(/\s+/g, " ").trim()),
  });
  const named = namedStatements(client);
  const db = drizzle({ client: named, schema }) as unknown as Db;
  return {
    db,
    kind: "postgres",
    rows: async <T>(query: Parameters<Database["rows"]>[0], on: Parameters<Database["rows"]>[1] = db) => (await on.execute(query)) as unknown as T[],
    query: async <T>(text: string, params: Parameters<Database["query"]>[1]) => (await named.unsafe(text, [...params])) as unknown as T[],
    // Not a verb's statement: a new plan's announcement is sent after its commit, coalesced with
    // others into at most one per ANNOUNCE_MS (store-new-plan.ts), on a connection not counted.
    notify: (channel, payload) => listening.notify(channel, payload),
    listen: (channel, onNotify) => listening.listen(channel, onNotify),
    migrate: async () => {},
    take() {
      const taken = sent;
      sent = [];
      return taken;
    },
    async close() {
      await client.end({ timeout: 5 });
      await listening.close();
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end({ timeout: 5 });
    },
  };
}
