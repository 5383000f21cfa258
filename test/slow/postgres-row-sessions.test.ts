import postgres from "postgres";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { TargetReader, TargetWriter } from "../../src/adapters/adapter.ts";
import { postgresRowAdapter } from "../../src/adapters/postgres-row/postgres-row-adapter.ts";
import { PostgresRowTarget, type PostgresRowAction, type PostgresRowPlanned } from "../../src/plan/postgres-row-schema.ts";
import { settleWrite } from "../../src/executor/verify-write.ts";
import { openRowDatabase, openRowTarget, type RowDatabase } from "../support/adapters-postgres.ts";
import { postgresKind } from "../support/databases.ts";
import { tcpRelay, type TcpRelay } from "../support/tcp-relay.ts";
import { waitFor } from "../support/wait-for.ts";

const adminUrl = process.env.TEST_DATABASE_URL;
const adapter = postgresRowAdapter();
const TIMEOUT_MS = 2000;
/** The advisory lock a deferred trigger of `held` takes at commit: held by a test, it holds up the commit. */
const COMMIT_LOCK = 4242;

/**
 * postgres.row's sessions: a URL's query cannot set what the adapter's
 * sessions rely on; a write given a deadline sends nothing, or a write bounded by the time left,
 * once a slow connection used up the time; a write whose answer is lost is settled only once its
 * session has ended, its commit included.
 */
describe.skipIf(!postgresKind || !adminUrl)("postgres.row sessions: the URL's query, the write's deadline, a lost answer", () => {
  let db: RowDatabase;
  let target: PostgresRowTarget;
  let reader: TargetReader<PostgresRowAction, PostgresRowPlanned>;
  let closeTarget: (() => Promise<void>) | undefined;
  let relay: TcpRelay;
  const writeRole = () => decodeURIComponent(new URL(db.writeUrl).username);
  const update = (table: string, name: string) =>
    reader.preview({ kind: "postgres.row", target: "crmdb", table, key: { id: 1 }, op: "update", values: { name } });
  const row = async (table: string) => db.admin.unsafe(`SELECT name, version FROM ${table} WHERE id = 1`);
  /** A writer whose connections go through the relay, as the executor opens one (cold: no connection yet). */
  const writerThroughRelay = (): TargetWriter<PostgresRowPlanned> => adapter.openWriter("crmdb", { ...target, write: { url: relay.url(db.writeUrl) } });
  const runningWrites = async () =>
    (await db.admin`SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = ${writeRole()} AND state = 'active'`)[0]!.n as number;

  beforeAll(async () => {
    db = await openRowDatabase(adminUrl!);
    const readRole = decodeURIComponent(new URL(db.readUrl).username);
    await db.admin.unsafe(`
      CREATE TABLE people (id int4 PRIMARY KEY, name text, version int4 NOT NULL);
      CREATE TABLE held (id int4 PRIMARY KEY, name text, version int4 NOT NULL);
      CREATE FUNCTION hold_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_advisory_xact_lock(${COMMIT_LOCK}); RETURN NULL; END $$;
      CREATE CONSTRAINT TRIGGER held_at_commit AFTER UPDATE ON held DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION hold_commit();
      GRANT SELECT ON people, held TO ${readRole};
      GRANT SELECT, UPDATE ON people, held TO ${writeRole()};`);
    ({
      target,
      reader,
      close: closeTarget,
    } = openRowTarget(db, { people: { key: ["id"], version: "version" }, held: { key: ["id"], version: "version" } }, TIMEOUT_MS));
    relay = await tcpRelay(new URL(db.writeUrl));
  });
  afterAll(async () => {
    await relay?.close();
    await closeTarget?.();
    await db?.close();
  });
  beforeEach(async () => {
    relay.connectDelayMs = 0;
    await db.admin.unsafe(`DELETE FROM people; DELETE FROM held; INSERT INTO people VALUES (1, 'Ada', 1); INSERT INTO held VALUES (1, 'Ada', 1);`);
  });

  /** Runs `lock` in an admin transaction, then `writing` while it holds, and ends the transaction when `release` returns. */
  async function whileLocked<T>(
    lock: (sql: postgres.TransactionSql) => Promise<unknown>,
    writing: () => Promise<T>,
    release: (applying: () => Promise<T>) => Promise<unknown>,
  ): Promise<T> {
    let locked!: () => void;
    const held = new Promise<void>((resolve) => (locked = resolve));
    let applying!: Promise<T>;
    const tx = db.admin.begin(async (sql) => {
      await lock(sql);
      locked();
      await release(() => applying);
    });
    await held;
    applying = writing();
    await tx;
    return applying;
  }
  const rowLock = (table: string) => (sql: postgres.TransactionSql) => sql.unsafe(`SELECT 1 FROM ${table} WHERE id = 1 FOR UPDATE`);
  const commitLock = (sql: postgres.TransactionSql) => sql`SELECT pg_advisory_xact_lock(${COMMIT_LOCK})`;
  const writeWaits = (on: "Lock" | "advisory") =>
    waitFor(
      `the write to wait on ${on === "Lock" ? "the row lock" : "the lock its commit takes"}`,
      async () =>
        (
          await db.admin`SELECT 1 FROM pg_stat_activity WHERE usename = ${writeRole()} AND ${on === "Lock" ? db.admin`wait_event_type = 'Lock'` : db.admin`wait_event = 'advisory'`}`
        ).length > 0,
    );

  it("a URL whose query sets statement_timeout is refused, naming the target and the parameter: postgres.js would let it win over the session's own", async () => {
    // Why: the URL's query goes into the startup packet after (so over) the connection options.
    const raw = postgres(`${db.writeUrl}?statement_timeout=0`, { max: 1, onnotice: () => {}, connection: { statement_timeout: TIMEOUT_MS } });
    try {
      expect(await raw`SHOW statement_timeout`).toEqual([{ statement_timeout: "0" }]);
    } finally {
      await raw.end({ timeout: 5 });
    }
    const withQuery = { ...target, write: { url: `${db.writeUrl}?statement_timeout=0` } };
    expect(PostgresRowTarget.safeParse(withQuery).error?.issues).toMatchObject([
      {
        path: ["write", "url"],
        message: expect.stringMatching(/^the URL's query sets "statement_timeout", which postgres.js would send as a session setting/),
      },
    ]);
    // A target built without the config schema is refused when its writer or reader is opened.
    expect(() => adapter.openWriter("crmdb", withQuery)).toThrow(/^target 'crmdb': the URL's query sets "statement_timeout"/);
    expect(() => adapter.openReader("crmdb", { ...target, read: { url: `${db.readUrl}?options=-c%20default_transaction_read_only%3Doff` } })).toThrow(
      /^target 'crmdb': the URL's query sets "options"/,
    );
  });

  describe("a write given a deadline, on a cold connection slow to open", () => {
    it("the connection is ready only after the deadline: expired, nothing sent", async () => {
      const { planned } = await update("people", "Ada Lovelace");
      relay.connectDelayMs = 1200;
      const writer = writerThroughRelay();
      try {
        expect(await writer.apply(planned, "k", performance.now() + 600)).toEqual({
          status: "expired",
          detail: "update /people/1 on 'crmdb' was not sent: the deadline had passed when the connection was ready, too little for the write to land before it",
        });
      } finally {
        await writer.close();
      }
      expect(await row("people")).toEqual([{ name: "Ada", version: 1 }]);
    });

    it("less than timeoutMs is left when it is ready: the statement_timeout is cut to what is left, so a write held past the deadline is cancelled before it and never lands after", async () => {
      const { planned } = await update("people", "Ada Lovelace");
      relay.connectDelayMs = 1200;
      const writer = writerThroughRelay();
      const deadline = performance.now() + TIMEOUT_MS + 600;
      try {
        const answered = await whileLocked(
          rowLock("people"),
          async () => ({ result: await writer.apply(planned, "k", deadline), at: performance.now() }),
          async (applying) => {
            await applying(); // the lock outlasts the deadline: held until the write has answered
            await waitFor("the deadline to pass", () => performance.now() > deadline + 300);
          },
        );
        expect(answered.result).toMatchObject({
          status: "failed",
          errorClass: "transient",
          detail: expect.stringMatching(
            /^update \/people\/1 on 'crmdb' was refused: canceling statement due to statement timeout \(its statement_timeout was cut to \d+ ms, the time left before the deadline; nothing was written\)$/,
          ),
        });
        expect(answered.at).toBeLessThan(deadline);
      } finally {
        await writer.close();
      }
      expect(await runningWrites()).toBe(0);
      expect(await row("people")).toEqual([{ name: "Ada", version: 1 }]);
    });

    it("with less than timeoutMs left and nothing in the way, the bounded write commits once", async () => {
      const { planned, preview } = await update("people", "Ada Lovelace");
      relay.connectDelayMs = 1200;
      const writer = writerThroughRelay();
      try {
        expect(await writer.apply(planned, "k", performance.now() + TIMEOUT_MS + 600)).toEqual({ status: "applied" });
        // The connection goes back to the pool out of its transaction, with the session's own timeout.
        expect(await writer.apply(planned, "k")).toMatchObject({ status: "applied", reconciled: true });
      } finally {
        await writer.close();
      }
      expect(await row("people")).toEqual([{ name: "Ada Lovelace", version: 2 }]);
      expect(await reader.verify(planned, preview)).toEqual({ verified: true });
    });
  });

  describe("a write whose connection drops before its answer", () => {
    let writer: TargetWriter<PostgresRowPlanned>;
    beforeAll(() => {
      writer = writerThroughRelay();
    });
    afterAll(async () => {
      await writer?.close();
    });

    /** The write's answer, when it came, and the row and the write role's running statements at that moment. */
    const applyAndLook = (table: string, planned: PostgresRowPlanned) => async () => {
      const result = await writer.apply(planned, "k");
      return { result, at: performance.now(), running: await runningWrites(), row: await row(table) };
    };
    /** What the executor records for it: settled by a re-read with the read role. */
    const settled = (result: Parameters<typeof settleWrite>[1], planned: PostgresRowPlanned, seen: { before: unknown; after: unknown }) =>
      settleWrite({ index: 0, target: "crmdb", path: planned.path }, result, () => reader.verify(planned, seen as Parameters<typeof reader.verify>[1]));

    it("waiting on a row lock released after the drop: the orphaned statement commits, the apply answers only after its session ended, and the re-read finds it", async () => {
      const { planned, preview } = await update("people", "Ada Lovelace");
      const answered = await whileLocked(rowLock("people"), applyAndLook("people", planned), async () => {
        await writeWaits("Lock");
        relay.cut();
        // The other transaction goes on a moment after the drop, then commits and lets the orphan through.
        await new Promise((resolve) => setTimeout(resolve, 500));
      });
      expect(answered).toMatchObject({
        result: {
          status: "uncertain",
          detail: expect.stringMatching(
            /got no answer .*its session \(backend pid \d+\) was waited for until it ended or went idle \(\d+ ms\), so the re-read sees whether it was written$/,
          ),
        },
        running: 0,
        row: [{ name: "Ada Lovelace", version: 2 }],
      });
      expect(await settled(answered.result as Parameters<typeof settleWrite>[1], planned, preview)).toMatchObject({ status: "applied", verified: true });
    });

    it("a partition the server does not see: the session goes idle once the orphan commits, the apply answers then (not after timeoutMs + 5 s), and the write is settled applied", async () => {
      const { planned, preview } = await update("people", "Ada Lovelace");
      const answered = await whileLocked(rowLock("people"), applyAndLook("people", planned), async () => {
        await writeWaits("Lock");
        relay.partition();
        await new Promise((resolve) => setTimeout(resolve, 500));
      });
      expect(answered).toMatchObject({
        result: { status: "uncertain", detail: expect.stringMatching(/was waited for until it ended or went idle \(\d+ ms\)/) },
        row: [{ name: "Ada Lovelace", version: 2 }],
      });
      expect(await settled(answered.result as Parameters<typeof settleWrite>[1], planned, preview)).toMatchObject({ status: "applied", verified: true });
      relay.cut(); // the server's side of the partitioned connection
    });

    it("the row lock outlasts the statement_timeout: the orphan is cancelled before the apply answers, and nothing lands later", async () => {
      const { planned, preview } = await update("people", "Ada Lovelace");
      const answered = await whileLocked(rowLock("people"), applyAndLook("people", planned), async (applying) => {
        await writeWaits("Lock");
        relay.cut();
        await applying(); // the lock is held until the write has answered
      });
      expect(answered).toMatchObject({ result: { status: "uncertain" }, running: 0, row: [{ name: "Ada", version: 1 }] });
      expect(await settled(answered.result as Parameters<typeof settleWrite>[1], planned, preview)).toMatchObject({ status: "failed", verified: false });
      expect(await row("people")).toEqual([{ name: "Ada", version: 1 }]);
    });

    it("its commit is held up past statement_timeout + 1 s (as a synchronous standby or a slow disk would): the apply answers only once the session ended, and the write is settled applied", async () => {
      const { planned, preview } = await update("held", "Ada Lovelace");
      let released = 0;
      const answered = await whileLocked(commitLock, applyAndLook("held", planned), async () => {
        await writeWaits("advisory");
        relay.cut();
        // Longer than statement_timeout + 1 s: the re-read must not wait on a timeout of the apply.
        await new Promise((resolve) => setTimeout(resolve, TIMEOUT_MS + 1500));
        released = performance.now();
      });
      expect(answered.at).toBeGreaterThan(released);
      expect(answered).toMatchObject({
        result: { status: "uncertain", detail: expect.stringContaining("was waited for until it ended or went idle") },
        running: 0,
        row: [{ name: "Ada Lovelace", version: 2 }],
      });
      expect(await settled(answered.result as Parameters<typeof settleWrite>[1], planned, preview)).toMatchObject({ status: "applied", verified: true });
    });

    it("its commit is held up for good: past timeoutMs + 5 s the session is ended (pg_terminate_backend), the write is settled failed, and nothing lands later", async () => {
      const { planned, preview } = await update("held", "Ada Lovelace");
      const answered = await whileLocked(commitLock, applyAndLook("held", planned), async (applying) => {
        await writeWaits("advisory");
        relay.cut();
        await applying(); // the commit's lock is held until the write has answered
      });
      expect(answered).toMatchObject({
        result: {
          status: "uncertain",
          detail: expect.stringMatching(
            /its session \(backend pid \d+\) was still there after \d+ ms and was ended \(pg_terminate_backend\), after \d+ ms in all, so the re-read sees whether it was written$/,
          ),
        },
        running: 0,
        row: [{ name: "Ada", version: 1 }],
      });
      expect(await settled(answered.result as Parameters<typeof settleWrite>[1], planned, preview)).toMatchObject({ status: "failed", verified: false });
      expect(await row("held")).toEqual([{ name: "Ada", version: 1 }]);
    });
  });
});
