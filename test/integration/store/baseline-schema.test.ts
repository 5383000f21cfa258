import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { drizzle } from "drizzle-orm/postgres-js";
import { migrate } from "drizzle-orm/postgres-js/migrator";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql, type Database } from "../../../src/store/db.ts";
import { shippedMigrations } from "../../../src/store/migrations.ts";
import { openMigrated } from "../../../src/store/open-migrated.ts";
import { runCli } from "../../support/cli.ts";
import { openThrowawayPostgres } from "../../support/databases.ts";

/** The last commit whose migrations/ holds the 31 migrations the baseline replaced (0000_init … 0030_outbox_due_dropped). */
const OLD_CHAIN_COMMIT = "97f0e973e6a55b3055e7dfd9232b1d935d4a5ef3";
const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

/** What differs, and may: the legacy global audit chain's head table, its key and its guards, only in the old chain; */
const ONLY_IN_THE_OLD_CHAIN = [
  "Name: audit_head audit_head_append_only; Type: TRIGGER; Schema: public",
  "Name: audit_head audit_head_no_truncate; Type: TRIGGER; Schema: public",
  "Name: audit_head audit_head_pkey; Type: CONSTRAINT; Schema: public",
  "Name: audit_head; Type: TABLE; Schema: public",
];
/** and what the baseline gained since it replaced the old chain: executor_presence, people, batches, delegations, their keys and indexes. */
const ONLY_IN_THE_BASELINE = [
  "Name: batches batches_pkey; Type: CONSTRAINT; Schema: public",
  "Name: batches; Type: TABLE; Schema: public",
  "Name: batches_expires_at; Type: INDEX; Schema: public",
  "Name: delegations delegations_pkey; Type: CONSTRAINT; Schema: public",
  "Name: delegations; Type: TABLE; Schema: public",
  "Name: delegations_delegate_open; Type: INDEX; Schema: public",
  "Name: delegations_delegator_open; Type: INDEX; Schema: public",
  "Name: executor_presence executor_presence_pkey; Type: CONSTRAINT; Schema: public",
  "Name: executor_presence; Type: TABLE; Schema: public",
  "Name: people people_pkey; Type: CONSTRAINT; Schema: public",
  "Name: people; Type: TABLE; Schema: public",
  "Name: people_display_name; Type: INDEX; Schema: public",
  "Name: plans_undoes; Type: INDEX; Schema: public",
];
/**
 * and what changed in objects both have: the plans' undo columns, the decisions' for_user, and the immutability guard that
 * lets undone_by be set once. Each rewrite takes the change out of the baseline's text, so
 * anything else that differs still shows.
 */
const UNDO_GUARD = [
  "  IF OLD.undone_by IS NOT NULL AND NEW.undone_by IS DISTINCT FROM OLD.undone_by THEN",
  "    RAISE EXCEPTION 'plan %: it was undone by %, which is fixed', OLD.id, OLD.undone_by USING ERRCODE = 'integrity_constraint_violation';",
  "  END IF;",
].join("\n");
const CHANGED_SINCE: Record<string, (text: string) => string> = {
  "Name: plans; Type: TABLE; Schema: public": (text) => text.replace("\n    undoes uuid\n    undone_by uuid", ""),
  "Name: decisions; Type: TABLE; Schema: public": (text) => text.replace("\n    for_user text", ""),
  "Name: countersign_plans_immutable(); Type: FUNCTION; Schema: public": (text) => text.replace(", 'undone_by']", "]").replace(`\n${UNDO_GUARD}`, ""),
  "Name: countersign_plans_document_fixed(); Type: FUNCTION; Schema: public": (text) => text.replace(", 'undone_by']", "]"),
};

const testDatabaseUrl = process.env.TEST_DATABASE_URL;

/** Why this file cannot run here, if it cannot (without TEST_DATABASE_URL databases.ts says so for every file). */
function missing(): string | undefined {
  if (!testDatabaseUrl) return undefined;
  try {
    execFileSync("git", ["cat-file", "-e", `${OLD_CHAIN_COMMIT}^{commit}`], { cwd: ROOT, stdio: "ignore" });
  } catch {
    return `git history with commit ${OLD_CHAIN_COMMIT} (the migrations before the baseline) is not available (a shallow clone, or no .git): fetch it (git fetch --unshallow)`;
  }
  try {
    execFileSync("pg_dump", ["--version"], { stdio: "ignore" });
  } catch {
    return "pg_dump is not on PATH: install the PostgreSQL client of the server's version or later";
  }
  return undefined;
}
const why = missing();
if (why) {
  const message = `the baseline's schema comparison is SKIPPED: ${why}`;
  if (process.env.CI === "true") throw new Error(`CI=true but ${message}`);
  console.warn(`\n!!! ${message}\n`);
}

/** The old chain's SQL files and journal, as git holds them at OLD_CHAIN_COMMIT, in a folder of their own. */
function oldChainFolder(): string {
  const folder = mkdtempSync(path.join(os.tmpdir(), "countersign-old-migrations-"));
  mkdirSync(path.join(folder, "meta"));
  const files = execFileSync("git", ["ls-tree", "--name-only", `${OLD_CHAIN_COMMIT}:migrations/`], { cwd: ROOT, encoding: "utf8" })
    .split("\n")
    .filter((name) => name.endsWith(".sql"));
  for (const name of [...files, "meta/_journal.json"])
    writeFileSync(path.join(folder, name), execFileSync("git", ["show", `${OLD_CHAIN_COMMIT}:migrations/${name}`], { cwd: ROOT, maxBuffer: 64 << 20 }));
  return folder;
}

/**
 * `pg_dump --schema-only` as one normalized text per object, keyed by its header
 * (`Name: …; Type: …; Schema: …`): without ownership, comments and SET lines, and with a table's
 * columns sorted (columns a migration added come last in the old chain, in the schema's order in
 * the baseline; nothing reads columns by position).
 */
function schemaOf(url: string): Map<string, string> {
  const dump = execFileSync("pg_dump", ["--schema-only", "--no-owner", url], { encoding: "utf8", maxBuffer: 64 << 20 });
  const parts = dump.split(/^--\n-- (Name: .*)\n--\n/m);
  const objects = new Map<string, string>();
  for (let i = 1; i < parts.length; i += 2) {
    const header = parts[i]!.replace(/; Owner: .*$/, "");
    const lines = parts[i + 1]!.split("\n").filter((line) => line.trim() !== "" && !/^(--|\\|SET |SELECT pg_catalog\.set_config)/.test(line));
    if (lines[0]?.startsWith("CREATE TABLE ")) {
      const end = lines.indexOf(");");
      const columns = lines.slice(1, end).map((line) => line.replace(/,$/, ""));
      lines.splice(1, end - 1, ...columns.sort());
    }
    objects.set(header, lines.join("\n"));
  }
  return objects;
}

/** The migrations before the baseline are history: a database they made is compared with the baseline's, then refused. */
describe.skipIf(!testDatabaseUrl || why)("the baseline on PostgreSQL", () => {
  let folder: string;
  let old: Database & { url: string };
  let baseline: Database & { url: string };
  let cwd: string;

  beforeAll(async () => {
    folder = oldChainFolder();
    cwd = mkdtempSync(path.join(os.tmpdir(), "countersign-baseline-"));
    old = await openThrowawayPostgres(testDatabaseUrl!, { prefix: "cs_old_chain" });
    baseline = await openThrowawayPostgres(testDatabaseUrl!, { prefix: "cs_baseline" });
    const client = postgres(old.url, { max: 1, onnotice: () => {} });
    try {
      await migrate(drizzle({ client }), { migrationsFolder: folder });
    } finally {
      await client.end({ timeout: 5 });
    }
    await baseline.migrate();
  });
  afterAll(async () => {
    await old?.close();
    await baseline?.close();
    for (const dir of [folder, cwd]) if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const applied = async (database: Database) =>
    (
      await database.rows<{ created_at: string; hash: string }>(sql`SELECT created_at::text AS created_at, hash FROM drizzle.__drizzle_migrations ORDER BY id`)
    ).map((r) => ({ when: Number(r.created_at), hash: r.hash }));

  it("has the old chain's schema but for the legacy audit chain and the tables added since; only the bookkeeping rows differ beside them", async () => {
    const before = schemaOf(old.url);
    const after = new Map([...schemaOf(baseline.url)].map(([k, text]) => [k, CHANGED_SINCE[k]?.(text) ?? text]));
    const changed = [...after.keys()].filter((k) => before.has(k) && before.get(k) !== after.get(k));
    expect(changed.map((k) => `${k}\n--- old chain\n${before.get(k)}\n--- baseline\n${after.get(k)}`)).toEqual([]);
    expect([...after.keys()].filter((k) => !before.has(k)).sort()).toEqual(ONLY_IN_THE_BASELINE);
    expect([...before.keys()].filter((k) => !after.has(k)).sort()).toEqual(ONLY_IN_THE_OLD_CHAIN);
    expect(after.size).toBeGreaterThan(100); // the dump was read, not an empty split

    expect(await applied(baseline)).toEqual(shippedMigrations().map(({ when, hash }) => ({ when, hash })));
    expect(await applied(old)).toHaveLength(31);
  });

  it("refuses to start on the old chain's database, in one line, and changes nothing in it", async () => {
    const rows = await applied(old);
    const name = new URL(old.url).pathname.slice(1);
    const line = new RegExp(
      `^DATABASE_URL: the database "${name}" on [^ ]+ was created by a Countersign from before 0\\.2's migration baseline, and cannot be upgraded; create a new database, point DATABASE_URL at it and start again$`,
    );
    await expect(openMigrated({ kind: "postgres", url: old.url })).rejects.toMatchObject({ name: "StartupError", message: expect.stringMatching(line) });
    const cli = await runCli(["migrate"], { cwd, env: { DATABASE_URL: old.url } });
    expect(cli.code, cli.stderr).toBe(1);
    expect(cli.stderr.trimEnd().split("\n"), cli.stderr).toEqual([expect.stringMatching(new RegExp(`^countersign: ${line.source.slice(1)}`))]);
    expect(await applied(old)).toEqual(rows);
    expect(await old.rows(sql`SELECT to_regclass('public.audit_head')::text AS t`)).toEqual([{ t: "audit_head" }]);
  });
});
