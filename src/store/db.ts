// The drivers (and the template's unpacker) are imported when a database of their kind is
// opened, never up front: PGlite alone adds ~43 MB and its WASM to a process on PostgreSQL.
import { mkdirSync } from "node:fs";
import type { PGliteOptions } from "@electric-sql/pglite";
import { is, SQL, sql, type ExtractTablesWithRelations } from "drizzle-orm";
import { DrizzleQueryError } from "drizzle-orm/errors";
import { PgDialect, type PgDatabase, type PgQueryResultHKT, type PgTransaction } from "drizzle-orm/pg-core";
import { packagePath } from "../package-path.ts";
import { namedStatements, PLAN_CACHE } from "./named-statements.ts";
import * as schema from "./schema.ts";

export type Schema = typeof schema;
export type Db = PgDatabase<PgQueryResultHKT, Schema>;
export type Tx = PgTransaction<PgQueryResultHKT, Schema, ExtractTablesWithRelations<Schema>>;
/** Either the database or an open transaction: store functions take whichever the caller holds. */
export type Queryable = Db | Tx;

/** A statement as text with `$n` parameters, made without the query builder (store-new-plan.ts, locked-writes.ts). */
export interface TextStatement {
  text: string;
  params: readonly (string | number | null)[];
}

export const MIGRATIONS_FOLDER = packagePath("migrations");
/** Turns drizzle's SQL into text and parameters, for statements sent past drizzle's session. */
const dialect = new PgDialect();
/** Serializes migrations across replicas that start together. */
const MIGRATION_LOCK = 7_280_231_001;

export interface Database {
  db: Db;
  kind: "pglite" | "postgres";
  /** Raw SQL returning rows on both drivers (PGlite gives `{rows}`, postgres.js an array). */
  rows<T = Record<string, unknown>>(query: SQL, on?: Queryable): Promise<T[]>;
  /**
   * A statement as text with `$n` parameters, past the query builder: for the few hot statements
   * whose text is made once (a new plan's, store-new-plan.ts), so a call costs no SQL building.
   * Named on PostgreSQL like every statement. Errors are the driver's own (not wrapped by drizzle).
   */
  query<T = Record<string, unknown>>(text: string, params: readonly (string | number | null)[]): Promise<T[]>;
  /**
   * A transaction whose last statements (`last`, made by `body` from what its statements read) are
   * sent together with the COMMIT, one round trip instead of one each: on PostgreSQL they go out
   * in this order on the transaction's own connection; one that fails makes PostgreSQL roll the
   * COMMIT back, and its error is thrown. `body` throwing rolls back. `first`, reads only, go out
   * together right behind the BEGIN, in the same write (BEGIN's answer is checked with theirs,
   * before `body` runs), and their rows are handed to `body`; a failed one is thrown before `body`
   * runs. `last` may be drizzle SQL or a statement made as text (TextStatement). PGlite runs it as
   * a plain transaction (no network to save).
   * `plans: "generic"` gives the transaction's statements generic plans from their first execution
   * on a connection (GENERIC_PLANS): only for a transaction that reads and writes by key alone.
   */
  transactionEndingWith<T>(
    body: (tx: Tx, first: Record<string, unknown>[][]) => Promise<{ result: T; last?: Statement | readonly Statement[] | undefined }>,
    options?: { first?: readonly SQL[]; plans?: "generic" },
  ): Promise<T>;
  /** NOTIFY on a channel, as a statement of its own (outside any transaction). */
  notify(channel: string, payload: string): Promise<void>;
  /** LISTEN on a channel; the returned function stops listening. postgres.js re-listens after reconnects. */
  listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>>;
  migrate(): Promise<void>;
  close(): Promise<void>;
}

export type DatabaseTarget = { kind: "pglite"; dataDir: string } | { kind: "postgres"; url: string } | { kind: "pglite-memory"; loadDataDir?: Blob };

export async function openDatabase(target: DatabaseTarget): Promise<Database> {
  return target.kind === "postgres" ? openPostgres(target.url) : openPglite(target);
}

/**
 * PostgreSQL's default shared_buffers (128 MB) is sized for a server with many clients. PGlite
 * has one, a small database, and every read of a page not in the buffers is a memory copy from
 * its file system: 16 MB keeps ~70 MB less resident (docs/notes/pglite.md).
 */
const PGLITE_SETTINGS = ["-c", "shared_buffers=16MB"];

async function openPglite(target: Exclude<DatabaseTarget, { kind: "postgres" }>): Promise<Database> {
  const [{ PGlite }, { drizzle }, { migrate }, template] = await Promise.all([
    import("@electric-sql/pglite"),
    import("drizzle-orm/pglite"),
    import("drizzle-orm/pglite/migrator"),
    import("./pglite-template.ts"),
  ]);
  const options: PGliteOptions = { startParams: [...PGlite.defaultStartParams, ...PGLITE_SETTINGS] };
  if (target.kind === "pglite") {
    mkdirSync(target.dataDir, { recursive: true });
    options.dataDir = target.dataDir;
    if (!template.hasPgliteData(target.dataDir)) template.unpackTemplate(target.dataDir, template.installedPgliteVersion());
  } else if (target.loadDataDir) {
    options.loadDataDir = target.loadDataDir;
  }
  const client = await PGlite.create(options);
  const db = drizzle({ client, schema }) as unknown as Db;
  return {
    db,
    kind: "pglite",
    rows: async <T>(query: SQL, on: Queryable = db) => ((await on.execute(query)) as unknown as { rows: T[] }).rows,
    query: async <T>(text: string, params: readonly (string | number | null)[]) =>
      (await failedQueryNamed(text, params, () => client.query<T>(text, [...params]))).rows,
    transactionEndingWith: (body, options) =>
      db.transaction(async (tx) => {
        const first: Record<string, unknown>[][] = [];
        if (options?.plans === "generic") await tx.execute(GENERIC_PLANS);
        for (const statement of options?.first ?? []) first.push(((await tx.execute(statement)) as unknown as { rows: Record<string, unknown>[] }).rows);
        const { result, last } = await body(tx, first);
        for (const statement of statementsOf(last)) await tx.execute(is(statement, SQL) ? statement : sqlOfText(statement));
        return result;
      }),
    notify: async (channel, payload) => {
      await client.query("SELECT pg_notify($1, $2)", [channel, payload]);
    },
    listen: async (channel, onNotify) => {
      const stop = await client.listen(channel, onNotify);
      return async () => {
        if (!client.closed) await stop();
      };
    },
    // One process owns a PGlite data dir, so there is nobody to race; no lock needed.
    migrate: () => migrate(db as never, { migrationsFolder: MIGRATIONS_FOLDER }),
    close: async () => {
      if (!client.closed) await client.close();
    },
  };
}

/**
 * postgres.js reconnects by itself; its default backoff grows to 20 s per connection after a few
 * refused attempts, so a server that was down for seconds would stay unused for long after it
 * returned. Retry at most a second apart: a click held during an outage must land within
 * seconds of the database coming back. (The driver's null-socket crash on a restart is fixed
 * by the patch under patches/; docs/notes/postgres-driver.md.)
 */
const RECONNECT = { backoff: (attempt: number) => Math.min(0.05 * 2 ** attempt, 1), connect_timeout: 10 };

async function openPostgres(url: string): Promise<Database> {
  const [{ default: postgres }, { drizzle }, { migrate }] = await Promise.all([
    import("postgres"),
    import("drizzle-orm/postgres-js"),
    import("drizzle-orm/postgres-js/migrator"),
  ]);
  // Named statements: one round trip a statement instead of two (named-statements.ts).
  const client = postgres(url, { onnotice: () => {}, max: 10, ...RECONNECT, connection: PLAN_CACHE });
  const named = namedStatements(client);
  const db = drizzle({ client: named, schema }) as unknown as Db;
  return {
    db,
    kind: "postgres",
    rows: async <T>(query: SQL, on: Queryable = db) => (await on.execute(query)) as unknown as T[],
    query: async <T>(text: string, params: readonly (string | number | null)[]) =>
      (await failedQueryNamed(text, params, () => named.unsafe(text, [...params]))) as unknown as T[],
    transactionEndingWith: endingWithCommit(client, drizzle),
    notify: async (channel, payload) => {
      await client.notify(channel, payload);
    },
    listen: async (channel, onNotify) => {
      const { unlisten } = await client.listen(channel, onNotify);
      return unlisten;
    },
    migrate: async () => {
      // A session advisory lock must be held on the connection that migrates: use one of our own.
      const single = postgres(url, { onnotice: () => {}, max: 1 });
      try {
        await single`SELECT pg_advisory_lock(${MIGRATION_LOCK})`;
        await migrate(drizzle({ client: single }), { migrationsFolder: MIGRATIONS_FOLDER });
        await single`SELECT pg_advisory_unlock(${MIGRATION_LOCK})`;
      } finally {
        await single.end({ timeout: 5 });
      }
    },
    close: () => client.end({ timeout: 5 }),
  };
}

/**
 * Database.transactionEndingWith on PostgreSQL, on the driver's own transaction (`sql.begin`):
 * its `first` reads go out together right behind BEGIN (pipelined, so they must be reads), and
 * its last statements go out together, unanswered, right ahead of the COMMIT the driver sends
 * when the callback returns (one round trip for the writes and the commit). A failed last
 * statement aborts the transaction, and PostgreSQL answers the COMMIT of an aborted transaction
 * with a ROLLBACK, not an error: so the last statements' own answers are what say whether it
 * committed, and the first failure among them is thrown. `sql.begin` fails at once when its connection closes, whatever it was waiting
 * for; a transaction on a `sql.reserve()` connection could wait for good instead (patches/README.md).
 * Exported for test databases built on a client of their own (test/support/counting-postgres.ts).
 */
export function endingWithCommit(
  client: import("postgres").Sql,
  drizzle: (config: { client: import("postgres").Sql }) => unknown,
): Database["transactionEndingWith"] {
  return async (body, options) => {
    let last: Sent[] = [];
    // "pipelined" (patches/README.md): the first reads go out behind BEGIN, not a round trip after
    // it (once the connection has described them); BEGIN's answer is awaited with theirs, before
    // anything is written.
    const result = await client.begin("pipelined", async (inTx) => {
      // drizzle reads the client's type parsers from `options`, which a transaction's sql lacks.
      const conn = namedStatements(Object.assign(inTx, { options: client.options }) as unknown as import("postgres").Sql);
      // Each execute() queues its statement on the connection at once, so they go out in this order.
      const send = (statements: readonly Statement[]): Sent[] =>
        statements.map((statement) => {
          const { text, params } = is(statement, SQL) ? textOf(statement) : statement;
          const query = conn.unsafe(text, params as never[]);
          query.execute();
          // Awaited by the caller (the reads) or after the COMMIT (the last statements), which throws the first failure; never unhandled.
          query.catch(() => undefined);
          return { text, params, query };
        });
      const generic = options?.plans === "generic" ? 1 : 0;
      const reads = send(generic ? [GENERIC_PLANS, ...(options?.first ?? [])] : (options?.first ?? []));
      const answered = await Promise.allSettled(reads.map((r) => r.query));
      // Answered before the reads were: had BEGIN failed, they ran outside any transaction, and
      // nothing may follow them.
      await (inTx as unknown as { began: Promise<unknown> }).began;
      const readFailed = answered.findIndex((r) => r.status === "rejected");
      if (readFailed >= 0) throw failedStatement(reads[readFailed]!, (answered[readFailed] as PromiseRejectedResult).reason);
      const done = await body(
        drizzle({ client: conn }) as Tx,
        answered.slice(generic).map((r) => [...(r as PromiseFulfilledResult<Record<string, unknown>[]>).value]),
      );
      last = send(statementsOf(done.last));
      return done.result;
    });
    // The first failure is the cause: the statements after it failed because the transaction had.
    const settled = await Promise.allSettled(last.map((l) => l.query));
    const failed = settled.findIndex((s) => s.status === "rejected");
    if (failed >= 0) throw failedStatement(last[failed]!, (settled[failed] as PromiseRejectedResult).reason);
    return result as never;
  };
}

/**
 * A transaction that only reads and writes rows by key has no statement whose plan depends on a
 * parameter's value, so its statements take generic plans from their first execution on a
 * connection, not after five custom ones (PLAN_CACHE's `auto`): planning its CTEs costs PostgreSQL
 * 0.15–0.5 ms per statement on an approval's path (five statements, when every execution is
 * planned). SET LOCAL ends with the transaction. Sent with the first reads, so it
 * costs no round trip.
 */
const GENERIC_PLANS = sql`SET LOCAL plan_cache_mode = force_generic_plan`;

export type Statement = SQL | TextStatement;

function textOf(statement: SQL): TextStatement {
  const { sql: text, params } = dialect.sqlToQuery(statement);
  return { text, params: params as TextStatement["params"] };
}

/**
 * A text statement as drizzle SQL (PGlite runs statements through drizzle): its `$n` become
 * parameters again. Only for texts whose every `$` starts a parameter (no `$` in literals).
 */
export function sqlOfText(statement: TextStatement): SQL {
  const chunks = statement.text.split(/\$(\d+)/);
  return sql.join(chunks.map((chunk, i) => (i % 2 === 0 ? sql.raw(chunk) : sql`${statement.params[Number(chunk) - 1]}`)));
}

interface Sent {
  text: string;
  params: readonly unknown[];
  query: PromiseLike<unknown> & { catch(onRejected: (reason: unknown) => unknown): unknown };
}

function statementsOf(last: Statement | readonly Statement[] | undefined): readonly Statement[] {
  return last === undefined ? [] : Array.isArray(last) ? last : [last as Statement];
}

function failedStatement(statement: { text: string; params: readonly unknown[] }, reason: unknown): DrizzleQueryError {
  return new DrizzleQueryError(statement.text, [...statement.params], reason instanceof Error ? reason : new Error(String(reason)));
}

/**
 * A statement sent past the query builder fails the way drizzle's do: a DrizzleQueryError naming
 * the statement, the driver's error as its cause. So the log line of a failed hot statement says
 * what failed (log-redaction.ts drops the parameters) and database-errors.ts classifies it as any other.
 */
async function failedQueryNamed<T>(text: string, params: readonly (string | number | null)[], run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    throw new DrizzleQueryError(text, [...params], err instanceof Error ? err : new Error(String(err)));
  }
}

export { sql };
