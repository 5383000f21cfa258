import { eq, sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { claimApproved } from "../../../src/service/execution/claim-approved.ts";
import { plans } from "../../../src/store/schema.ts";
import { databaseKinds } from "../../support/databases.ts";
import { useHarness } from "../../support/use-harness.ts";

/**
 * Database.transactionEndingWith (decide, the claim): its `first` reads and its last statements
 * run in the body's transaction, in order; a statement that fails leaves nothing of the
 * transaction and throws; a body that throws rolls back; a lost connection fails the call at once.
 */
describe.each(databaseKinds)("transactionEndingWith on $name", (kind) => {
  const h = useHarness(kind);
  const table = `ending_with_${kind.name.replace(/\W/g, "_")}`;

  const rows = async () => (await h.database.rows<{ v: number }>(sql.raw(`SELECT v FROM ${table} ORDER BY v`))).map((r) => r.v);
  const fresh = async () => {
    await h.database.rows(sql.raw(`DROP TABLE IF EXISTS ${table}`));
    await h.database.rows(sql.raw(`CREATE TABLE ${table} (v int PRIMARY KEY)`));
  };

  it("runs the last statement after the body's, in the same transaction, and returns the body's result", async () => {
    await fresh();
    const result = await h.database.transactionEndingWith(async (tx) => {
      await tx.execute(sql.raw(`INSERT INTO ${table} VALUES (1)`));
      // Sees the body's row: the same transaction, after it.
      return { result: "done", last: sql.raw(`INSERT INTO ${table} SELECT v + 1 FROM ${table} WHERE v = 1`) };
    });
    expect(result).toBe("done");
    expect(await rows()).toStrictEqual([1, 2]);
  });

  it("a last statement that fails rolls the whole transaction back and throws", async () => {
    await fresh();
    await expect(
      h.database.transactionEndingWith(async (tx) => {
        await tx.execute(sql.raw(`INSERT INTO ${table} VALUES (1)`));
        return { result: "never", last: sql.raw(`INSERT INTO ${table} VALUES (1)`) }; // duplicate key
      }),
    ).rejects.toThrow(/insert into ending_with/i);
    expect(await rows()).toStrictEqual([]);
    // The connection is usable afterwards (not left inside the failed transaction).
    await h.database.transactionEndingWith(async (tx) => {
      await tx.execute(sql.raw(`INSERT INTO ${table} VALUES (3)`));
      return { result: undefined };
    });
    expect(await rows()).toStrictEqual([3]);
  });

  it("a body that throws rolls back", async () => {
    await fresh();
    await expect(
      h.database.transactionEndingWith(async (tx) => {
        await tx.execute(sql.raw(`INSERT INTO ${table} VALUES (1)`));
        throw new Error("body failed");
      }),
    ).rejects.toThrow("body failed");
    expect(await rows()).toStrictEqual([]);
  });

  it("a claim with nothing to claim ends its transaction without a last statement", async () => {
    expect(await claimApproved(h.ctx)).toBeUndefined();
    expect(await h.database.db.select({ id: plans.id }).from(plans).where(eq(plans.status, "executing"))).toStrictEqual([]);
  });

  it("runs `first` in the transaction, in order, and hands their rows to the body", async () => {
    await fresh();
    await h.database.rows(sql.raw(`INSERT INTO ${table} VALUES (1)`));
    const result = await h.database.transactionEndingWith(
      async (_tx, [locked, count, txid]) => {
        return {
          result: { locked, count, txid },
          last: [sql.raw(`INSERT INTO ${table} VALUES (2)`), sql.raw(`INSERT INTO ${table} SELECT 3 WHERE txid_current() = ${Number(txid![0]!.id)}`)],
        };
      },
      {
        first: [
          sql.raw(`SELECT v FROM ${table} WHERE v = 1 FOR UPDATE`),
          sql.raw(`SELECT count(*)::int AS n FROM ${table}`),
          sql.raw("SELECT txid_current()::int8::text AS id"),
        ],
      },
    );
    expect(result.locked).toStrictEqual([{ v: 1 }]);
    expect(result.count).toStrictEqual([{ n: 1 }]);
    // The last statements ran in the transaction the reads began.
    expect(await rows()).toStrictEqual([1, 2, 3]);
  });

  it('`plans: "generic"` plans the transaction\'s statements generically, its `first` rows unchanged, and leaves the setting to the transaction', async () => {
    const setting = sql.raw("SELECT current_setting('plan_cache_mode') AS mode");
    const seen = await h.database.transactionEndingWith(
      async (tx, [mode, one]) => {
        const inBody = (await tx.execute(setting)) as unknown as { rows?: { mode: string }[] } & { mode: string }[];
        return { result: { mode, one, inBody: (inBody.rows ?? inBody)[0]!.mode } };
      },
      { first: [setting, sql.raw("SELECT 1 AS one")], plans: "generic" },
    );
    expect(seen).toStrictEqual({ mode: [{ mode: "force_generic_plan" }], one: [{ one: 1 }], inBody: "force_generic_plan" });
    // Every connection of the pool is back to its own setting (`auto`, PLAN_CACHE) once the transaction ends.
    const after = await Promise.all(Array.from({ length: 12 }, () => h.database.rows<{ mode: string }>(setting)));
    expect(new Set(after.map((r) => r[0]!.mode))).toStrictEqual(new Set([kind.name === "postgres" ? "auto" : after[0]![0]!.mode]));
    // Without the option, statements are planned as the connection says.
    const plain = await h.database.transactionEndingWith(async (_tx, [mode]) => ({ result: mode }), { first: [setting] });
    expect(plain).not.toStrictEqual([{ mode: "force_generic_plan" }]);
  });

  it("a `first` read that fails throws before the body runs, and the connection is usable afterwards", async () => {
    await fresh();
    let ran = false;
    await expect(
      h.database.transactionEndingWith(
        async () => {
          ran = true;
          return { result: undefined };
        },
        { first: [sql.raw(`SELECT 1 FROM ${table}`), sql.raw(`SELECT v / 0 FROM (VALUES (1)) AS t (v)`)] },
      ),
    ).rejects.toThrow(/select v \/ 0/i);
    expect(ran).toBe(false);
    await h.database.transactionEndingWith(async () => ({ result: undefined, last: sql.raw(`INSERT INTO ${table} VALUES (4)`) }));
    expect(await rows()).toStrictEqual([4]);
  });

  it("of several last statements, a failing one rolls back those before it and throws its own error", async () => {
    await fresh();
    await expect(
      h.database.transactionEndingWith(async () => ({
        result: undefined,
        last: [sql.raw(`INSERT INTO ${table} VALUES (1)`), sql.raw(`INSERT INTO ${table} VALUES (1)`), sql.raw(`INSERT INTO ${table} VALUES (2)`)],
      })),
    ).rejects.toMatchObject({ cause: expect.objectContaining({ message: expect.stringMatching(/duplicate key/) }) });
    expect(await rows()).toStrictEqual([]);
  });

  // A connection lost mid-transaction (a PostgreSQL restart) must fail the call, never hang it:
  // a ROLLBACK or a query that waits for an answer from a closed connection waits for good.
  // PGlite has no connection to lose.
  it.skipIf(kind.name !== "postgres")(
    "a connection lost in a `first` read, in the body or between them fails the call at once as unreachable, and the pool works afterwards",
    async () => {
      await fresh();
      const { isDatabaseUnreachable } = await import("../../../src/store/database-errors.ts");
      const lost = (call: Promise<unknown>) =>
        Promise.race([
          call.then(
            () => "succeeded",
            (err: unknown) => (isDatabaseUnreachable(err) ? "unreachable" : `failed otherwise: ${String(err)}`),
          ),
          new Promise((resolve) => setTimeout(() => resolve("hung"), 60_000)),
        ]);
      const killSelf = sql.raw("SELECT pg_terminate_backend(pg_backend_pid())");
      expect(await lost(h.database.transactionEndingWith(async () => ({ result: undefined }), { first: [killSelf] }))).toBe("unreachable");
      expect(
        await lost(
          h.database.transactionEndingWith(async (tx) => {
            await tx.execute(killSelf);
            return { result: undefined };
          }),
        ),
      ).toBe("unreachable");
      // Lost between the reads and the last statements, with nothing in flight, as in a restart:
      // every connection of the pool closes, and others' queries make the pool reconnect the closed
      // ones, this transaction's among them. What the body sends next must fail, not go out on the
      // reconnected connection (ahead of its start-up, or outside any transaction) nor wait for an
      // answer that never comes (decide's approval hung so under db-restart: its click
      // acknowledged and never recorded).
      await h.database.rows(sql.raw(`INSERT INTO ${table} VALUES (6)`));
      let others: Promise<unknown> | undefined;
      expect(
        await lost(
          h.database.transactionEndingWith(
            async (_tx, first) => {
              const me = first[0]![0];
              const pid = Number(me!.pid);
              const { default: postgres } = await import("postgres");
              const admin = postgres(process.env.TEST_DATABASE_URL!, { onnotice: () => {}, max: 1 });
              try {
                const ours = `datname = '${String(me!.db)}' AND pid <> pg_backend_pid()`;
                const gone = async () => (await admin.unsafe(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE ${ours}`))[0]!.n as number;
                await admin.unsafe(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE ${ours}`);
                await expect.poll(gone, { timeout: 30_000, interval: 50 }).toBe(0);
              } finally {
                await admin.end({ timeout: 5 });
              }
              expect(pid).toBeGreaterThan(0);
              // Until the client has heard its connections close.
              await new Promise((resolve) => setTimeout(resolve, 300));
              others = Promise.allSettled(Array.from({ length: 12 }, () => h.database.rows(sql.raw("SELECT 1"))));
              return { result: undefined, last: [sql.raw(`DELETE FROM ${table} WHERE v = 6`)] };
            },
            { first: [sql.raw("SELECT pg_backend_pid() AS pid, current_database() AS db")] },
          ),
        ),
      ).toBe("unreachable");
      await others;
      // Nothing of the lost transaction's last statements ran anywhere (not outside a transaction either).
      await expect
        .poll(
          async () => {
            try {
              return await rows();
            } catch {
              return "not yet";
            }
          },
          { timeout: 60_000, interval: 200 },
        )
        .toStrictEqual([6]);
      await h.database.rows(sql.raw(`DELETE FROM ${table} WHERE v = 6`));
      // Lost while the last statements are under way: the first of them, new to the connection, is
      // described before it runs, so the driver holds the others (and the COMMIT) back in the
      // reservation's own queue; a connection that closes then must fail them too, not leave them
      // waiting for good.
      const killer = (async () => {
        const { default: postgres } = await import("postgres");
        const admin = postgres(process.env.TEST_DATABASE_URL!, { onnotice: () => {}, max: 1 });
        try {
          await expect
            .poll(
              async () =>
                (
                  await admin.unsafe(
                    "SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid() AND query LIKE '%held back behind%'",
                  )
                ).length,
              { timeout: 30_000, interval: 20 },
            )
            .toBe(1);
        } finally {
          await admin.end({ timeout: 5 });
        }
      })();
      expect(
        await lost(
          h.database.transactionEndingWith(async () => ({
            result: undefined,
            last: [sql`SELECT pg_sleep(${30}::float8) /* held back behind ${sql.raw(table)} */`, sql`DELETE FROM ${sql.raw(table)} WHERE v = ${6}`],
          })),
        ),
      ).toBe("unreachable");
      await killer;
      // The pool replaces the lost connections (a retry of the first statement may meet one closing).
      await expect
        .poll(
          async () => {
            try {
              await h.database.transactionEndingWith(async () => ({
                result: undefined,
                last: sql.raw(`INSERT INTO ${table} VALUES (5) ON CONFLICT DO NOTHING`),
              }));
              return await rows();
            } catch {
              return "not yet";
            }
          },
          { timeout: 60_000, interval: 200 },
        )
        .toStrictEqual([5]);
    },
  );
  // A transaction whose connection closed must send nothing more: the driver reconnects that
  // same connection for the next caller, and a late statement of ours would run on it outside
  // any transaction, our COMMIT would commit their transaction early, our ROLLBACK would undo
  // theirs. A client of one connection makes the reconnection certain.
  it.skipIf(kind.name !== "postgres")("a transaction whose connection closed sends nothing on the connection the pool reconnects for others", async () => {
    const { default: postgres } = await import("postgres");
    const { drizzle } = await import("drizzle-orm/postgres-js");
    const { plainTransaction } = await import("../../../src/store/db.ts");
    const { namedStatements } = await import("../../../src/store/named-statements.ts");
    const { isDatabaseUnreachable } = await import("../../../src/store/database-errors.ts");
    const db = (await h.database.rows<{ db: string }>(sql.raw("SELECT current_database() AS db")))[0]!.db;
    const url = new URL(process.env.TEST_DATABASE_URL!);
    url.pathname = `/${db}`;
    const one = postgres(url.toString(), { onnotice: () => {}, max: 1, backoff: () => 0.05 });
    const admin = postgres(url.toString(), { onnotice: () => {}, max: 1 });
    const inTransaction = plainTransaction(drizzle({ client: namedStatements(one) }) as never, (r) => [...(r as Record<string, unknown>[])]);
    const settle = (call: Promise<unknown>) =>
      call.then(
        () => "succeeded",
        (err: unknown) => (isDatabaseUnreachable(err) ? "unreachable" : `failed otherwise: ${String(err)}`),
      );
    /** Ends this transaction's backend from outside and waits until the server let it go. */
    const lose = async (pid: number) => {
      await admin.unsafe(`SELECT pg_terminate_backend(${pid})`);
      await expect
        .poll(async () => (await admin.unsafe(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = ${pid}`))[0]!.n, { timeout: 30_000, interval: 50 })
        .toBe(0);
    };
    const values = async () => (await admin.unsafe(`SELECT v FROM ${table} ORDER BY v`)).map((r) => Number(r.v));
    const pidRead = { first: [sql.raw("SELECT pg_backend_pid() AS pid")] };
    try {
      // Lost; the pool then reconnects the connection for a plain query, which ends idle.
      await fresh();
      expect(
        await settle(
          inTransaction(async (_tx, first) => {
            await lose(Number(first[0]![0]!.pid));
            await one`SELECT 1`; // waits for the close, then runs on the reconnected connection
            return { result: undefined, last: sql.raw(`INSERT INTO ${table} VALUES (7)`) };
          }, pidRead),
        ),
      ).toBe("unreachable");
      expect(await values()).toStrictEqual([]);

      // Lost while another caller's transaction runs on the reconnected connection, and will roll back.
      await fresh();
      let opened!: () => void;
      let finish!: () => void;
      const gate = new Promise<void>((resolve) => (finish = resolve));
      let theirs: Promise<unknown> = Promise.resolve();
      // The call fails as soon as its connection closes, which may be before the body has gone on
      // to start their transaction: the body says when it has.
      let started!: () => void;
      const theirsStarted = new Promise<void>((resolve) => (started = resolve));
      expect(
        await settle(
          inTransaction(async (_tx, first) => {
            await lose(Number(first[0]![0]!.pid));
            const inserted = new Promise<void>((resolve) => (opened = resolve));
            theirs = one
              .begin(async (s) => {
                await s.unsafe(`INSERT INTO ${table} VALUES (8)`);
                opened();
                await gate;
                throw new Error("theirs rolls back");
              })
              .catch((err: unknown) => String(err));
            await inserted;
            started();
            return { result: undefined, last: sql.raw(`INSERT INTO ${table} VALUES (7)`) };
          }, pidRead),
        ),
      ).toBe("unreachable");
      await theirsStarted;
      finish();
      expect(await theirs).toMatch(/theirs rolls back/);
      expect(await values()).toStrictEqual([]); // neither our write nor theirs: our COMMIT did not commit theirs

      // The body refuses (throws) after the reconnect, while another caller's transaction runs there and commits.
      await fresh();
      let finish2!: () => void;
      const gate2 = new Promise<void>((resolve) => (finish2 = resolve));
      let theirs2: Promise<unknown> = Promise.resolve();
      let started2!: () => void;
      const theirs2Started = new Promise<void>((resolve) => (started2 = resolve));
      expect(
        await settle(
          inTransaction(async (_tx, first) => {
            await lose(Number(first[0]![0]!.pid));
            const inserted = new Promise<void>((resolve) => (opened = resolve));
            theirs2 = one.begin(async (s) => {
              await s.unsafe(`INSERT INTO ${table} VALUES (2)`);
              opened();
              await gate2;
              await s.unsafe(`INSERT INTO ${table} VALUES (3)`);
              return "committed";
            });
            await inserted;
            started2();
            throw new Error("refused after the reconnect");
          }, pidRead),
        ),
      ).toBe("unreachable");
      await theirs2Started;
      finish2();
      expect(await theirs2).toBe("committed");
      expect(await values()).toStrictEqual([2, 3]); // our ROLLBACK did not undo their first insert
    } finally {
      await one.end({ timeout: 5 });
      await admin.end({ timeout: 5 });
    }
  });

  // BEGIN cannot fail on a working connection; made to fail on the wire, the call must throw
  // BEGIN's error before the body runs and send nothing more on the connection, which stays usable.
  it.skipIf(kind.name !== "postgres")("a BEGIN that fails throws its error before the body runs, and nothing is written", async () => {
    const wire = await recordingClient();
    try {
      await fresh();
      await h.database.rows(sql.raw(`INSERT INTO ${table} VALUES (1)`));
      wire.breakNextBegin();
      let bodyRan = false;
      const call = wire.inTransaction(
        async () => {
          bodyRan = true;
          return { result: undefined, last: sql.raw(`INSERT INTO ${table} VALUES (2)`) };
        },
        { first: [sql`SELECT v FROM ${sql.raw(table)} WHERE v = ${1} FOR UPDATE`, sql`SELECT ${1}::int + 41 AS answer`] },
      );
      await expect(call).rejects.toThrow(/syntax error at or near "bogus"/);
      expect(bodyRan).toBe(false);
      expect(await rows()).toStrictEqual([1]);
      // Neither the writes, nor a COMMIT, nor the driver's ROLLBACK (there is no transaction to roll back).
      expect(wire.writes.join("")).not.toMatch(/INSERT|commit|rollback/);
      // The connection is the pool's again, idle, not in a transaction.
      const txid = async () => String((await wire.client`SELECT txid_current()::text AS id`)[0]!.id);
      expect(await txid()).not.toBe(await txid());
    } finally {
      await wire.end();
    }
  });

  /** A one-connection client of the test's database whose socket records each write, for transactionEndingWith on it. */
  async function recordingClient() {
    const { default: postgres } = await import("postgres");
    const { drizzle } = await import("drizzle-orm/postgres-js");
    const { plainTransaction } = await import("../../../src/store/db.ts");
    const { namedStatements } = await import("../../../src/store/named-statements.ts");
    const net = await import("node:net");
    const db = (await h.database.rows<{ db: string }>(sql.raw("SELECT current_database() AS db")))[0]!.db;
    const url = new URL(process.env.TEST_DATABASE_URL!);
    url.pathname = `/${db}`;
    const writes: string[] = [];
    let breakBegin = false;
    // A net.Socket is what the driver connects with itself; only its `end` overloads differ from SocketLike's.
    const socket: NonNullable<import("postgres").Options["socket"]> = () =>
      new Promise((resolve, reject) => {
        const s = net.connect(Number(url.port || 5432), url.hostname, () => resolve(s as never));
        s.once("error", reject);
        const write = s.write.bind(s) as (chunk: Buffer, ...rest: unknown[]) => boolean;
        s.write = ((chunk: Buffer | string, ...rest: unknown[]) => {
          const bytes = Buffer.from(chunk as Buffer);
          // The driver's BEGIN, a simple-query message of exactly "begin " (no mode): 'Q', its length (4 + 7), then the text and a NUL.
          const at = bytes.indexOf("Q\0\0\0\x0bbegin \0", 0, "latin1");
          if (breakBegin && at >= 0) {
            bytes.write("bogus", at + 5, "latin1");
            breakBegin = false;
          }
          writes.push(bytes.toString("latin1"));
          return write(bytes, ...rest);
        }) as typeof s.write;
      });
    const client = postgres(url.toString(), { onnotice: () => {}, max: 1, socket });
    await client`SELECT 1`; // connected (and its start-up writes made) before anything is recorded
    writes.length = 0;
    return {
      client,
      writes,
      inTransaction: plainTransaction(drizzle({ client: namedStatements(client) }) as never, (r) => [...(r as Record<string, unknown>[])]),
      breakNextBegin: () => void (breakBegin = true),
      end: () => client.end({ timeout: 5 }),
    };
  }
});
