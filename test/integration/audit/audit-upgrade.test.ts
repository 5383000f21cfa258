import { randomUUID } from "node:crypto";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { appendAudit, GENESIS_HASH, legacyAuditEventHash, type AuditInput } from "../../../src/service/records/audit.ts";
import { verifyAudit } from "../../../src/service/audit/verify-audit.ts";
import { MIGRATIONS_FOLDER, openDatabase, type Database } from "../../../src/store/db.ts";
import { sealAll } from "../../support/seal-all.ts";
import { useSealingPostgres } from "../../support/sealing-postgres.ts";

/** The last migration before the chains were split. */
const BEFORE_SPLIT = "0009_scan_indexes";

/** The migrations folder as it was before the split: the same files, the journal cut after BEFORE_SPLIT. */
function migrationsBeforeSplit(): string {
  const dir = mkdtempSync(join(tmpdir(), "countersign-migrations-"));
  cpSync(MIGRATIONS_FOLDER, dir, { recursive: true });
  const journal = JSON.parse(readFileSync(join(dir, "meta/_journal.json"), "utf8")) as { entries: { tag: string }[] };
  const cut = journal.entries.findIndex((e) => e.tag === BEFORE_SPLIT);
  expect(cut, `${BEFORE_SPLIT} is in the journal`).toBeGreaterThanOrEqual(0);
  journal.entries = journal.entries.slice(0, cut + 1);
  writeFileSync(join(dir, "meta/_journal.json"), JSON.stringify(journal));
  return dir;
}

interface Kind {
  name: string;
  /** A database migrated up to BEFORE_SPLIT only. */
  openOld(folder: string): Promise<Database>;
}

const kinds: Kind[] = [
  {
    name: "pglite",
    async openOld(folder) {
      const database = await openDatabase({ kind: "pglite-memory" });
      const { migrate } = await import("drizzle-orm/pglite/migrator");
      await migrate(database.db as never, { migrationsFolder: folder });
      return database;
    },
  },
];
const sealingPostgres = useSealingPostgres();
if (sealingPostgres) {
  kinds.push({
    name: "postgres",
    async openOld(folder) {
      const database = await sealingPostgres.openUnmigrated();
      const { migrate } = await import("drizzle-orm/postgres-js/migrator");
      await migrate(database.db as never, { migrationsFolder: folder });
      return database;
    },
  });
}

/** An existing install upgrades in place: the one global chain it has is kept, frozen and still verified the old way. */
describe.each(kinds)("audit chain upgrade on $name", (kind) => {
  let database: Database | undefined;
  let folder: string | undefined;
  afterEach(async () => {
    await database?.close();
    if (folder) rmSync(folder, { recursive: true, force: true });
  });

  /** What appendAudit did before the split: one chain for every event, its head moved with each append. */
  async function legacyAppend(db: Database, e: AuditInput): Promise<void> {
    const [last] = await db.rows<{ hash: string }>(sql`SELECT hash FROM audit_events ORDER BY id DESC LIMIT 1`);
    const prevHash = last?.hash ?? GENESIS_HASH;
    const hash = legacyAuditEventHash(prevHash, e);
    const [row] = await db.rows<{ id: number | string }>(sql`
      INSERT INTO audit_events (plan_id, type, actor, data, at, prev_hash, hash)
      VALUES (${e.planId}::uuid, ${e.type}, ${JSON.stringify(e.actor)}, ${JSON.stringify(e.data)}, ${e.at.toISOString()}::timestamptz, ${prevHash}, ${hash}) RETURNING id`);
    await db.db.execute(
      sql`INSERT INTO audit_head (id, last_event_id, hash) VALUES (1, ${row!.id}, ${hash}) ON CONFLICT (id) DO UPDATE SET last_event_id = excluded.last_event_id, hash = excluded.hash`,
    );
  }

  it("keeps the legacy chain verifiable under seal 0, chains new events apart, and still catches tampering with the old ones", async () => {
    folder = migrationsBeforeSplit();
    database = await kind.openOld(folder);
    const pending = randomUUID();
    const at = new Date("2026-12-01T10:00:00.000Z");
    await legacyAppend(database, { planId: null, type: "agent.added", actor: { type: "system", process: "cli" }, data: { name: "old" }, at });
    for (const type of ["plan.submitted", "decision.approve"]) {
      await legacyAppend(database, { planId: pending, type, actor: { type: "system", process: "test" }, data: {}, at });
    }
    await legacyAppend(database, { planId: randomUUID(), type: "plan.submitted", actor: { type: "system", process: "test" }, data: {}, at });

    await database.migrate();
    const ctx = { database, clock: () => new Date() };
    expect(await verifyAudit(ctx)).toMatchObject({ ok: true, events: 4, sealed: 4, unsealed: 0, head: { seq: 0 } });

    // A plan that was open at the upgrade starts a chain of its own; the legacy events stay where they are.
    await database.db.transaction((tx) =>
      appendAudit(tx, { planId: pending, type: "plan.approved", actor: { type: "system", process: "test" }, data: {}, at }),
    );
    expect(await verifyAudit(ctx)).toMatchObject({ ok: true, events: 5, sealed: 4, unsealed: 1 });
    expect(await sealAll(ctx)).toMatchObject([{ seq: 1, events: 1, eventsTotal: 5 }]);
    expect(await verifyAudit(ctx)).toMatchObject({ ok: true, events: 5, sealed: 5, unsealed: 0, head: { seq: 1 } });

    // The legacy head no longer moves, and the legacy events are still judged by it.
    for (const statement of [sql`UPDATE audit_head SET hash = 'x'`, sql`DELETE FROM audit_head`]) {
      const error = await database.db.execute(statement).then(
        () => undefined,
        (err: unknown) => err as Error & { cause?: Error },
      );
      expect((error?.cause ?? error)?.message).toMatch(/append-only/);
    }
    const [last] = await database.rows<{ id: number | string }>(sql`SELECT max(id) AS id FROM audit_events WHERE xid IS NULL`);
    await database.db.transaction(async (tx) => {
      await tx.execute(sql`ALTER TABLE audit_events DISABLE TRIGGER audit_events_append_only`);
      await tx.execute(sql`DELETE FROM audit_events WHERE id = ${last!.id}`);
      await tx.execute(sql`ALTER TABLE audit_events ENABLE TRIGGER audit_events_append_only`);
    });
    expect(await verifyAudit(ctx)).toMatchObject({
      ok: false,
      problem: { chain: "legacy", kind: "deleted", message: expect.stringContaining("recorded head") },
    });
  });
});
