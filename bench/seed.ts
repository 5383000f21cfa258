/**
 * Databases holding a stored history (10 k, 100 k, 1 M plans) for the "intake at scale" figure,
 * kept between runs. A history is what the product itself writes: a few plans are taken through
 * the whole flow by the product (submitted, approved by a Slack click, applied by the executor,
 * every Slack post and update delivered), then copied with `generate_series` into every table
 * that refers to a plan (plans, decisions, audit_events, outbox, slack_messages, …): new plan
 * ids, timestamps spread back in time, audit hash links renamed per copy, everything else (the
 * audit events' transaction ids included, so they count as sealed already) as the product wrote
 * it. So the seed follows the product's schema, whatever it is, without a hand-written row.
 *
 * A kept database is named for its size and the product's migrations (`…_1m_<hash>`): another
 * product version seeds its own rather than running on a schema it did not make. The recorded
 * plans are kept too (`…_templates_<hash>`), and every size starts as a copy of them: the product
 * runs its flow once per version, not once per size.
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import postgres from "postgres";
import { cleanEnv, countersignCommand, outputOf, productDir } from "./processes.ts";
import { clickApprove, databasePrefix, databaseUrl, planStatus, startStack, undelivered, until } from "./stack.ts";

/** Plans taken through the whole flow by the product, then copied. */
const TEMPLATES = 10;
/** Plans per INSERT … SELECT transaction while copying. */
const CHUNK = 100_000;

export function sizeLabel(plans: number): string {
  return plans >= 1_000_000 && plans % 1_000_000 === 0 ? `${plans / 1_000_000}m` : plans >= 1000 && plans % 1000 === 0 ? `${plans / 1000}k` : String(plans);
}

/** The product's migrations, one "file sha256" line each, in order. */
function migrationList(): string[] {
  const dir = path.join(productDir(), "migrations");
  return readdirSync(dir)
    .filter((f) => f.endsWith(".sql"))
    .sort()
    .map(
      (f) =>
        `${f} ${createHash("sha256")
          .update(readFileSync(path.join(dir, f)))
          .digest("hex")}`,
    );
}

/** The product's migrations, as a short hash: a kept database is only used by a product with the same. */
export function migrationsTag(): string {
  return createHash("sha256").update(migrationList().join("\n")).digest("hex").slice(0, 8);
}

/** The migrations a kept database was made (or brought up) with; undefined when it is not a finished seed. */
async function seededWith(adminUrl: string, name: string): Promise<string[] | undefined> {
  const db = postgres(databaseUrl(adminUrl, name), { onnotice: () => {}, max: 1 });
  try {
    const [row] =
      await db`SELECT to_regclass('bench_seeded') IS NOT NULL AS done, (SELECT count(*) FROM information_schema.columns WHERE table_name = 'bench_seeded' AND column_name = 'migrations') > 0 AS listed`;
    if (!row!.done) return undefined;
    if (!row!.listed) return [];
    const [seed] = await db`SELECT migrations FROM bench_seeded`;
    return (seed?.migrations as string | undefined)?.split("\n") ?? [];
  } finally {
    await db.end({ timeout: 5 });
  }
}

/**
 * The name of the kept database with `plans` stored plans. When there is none for this product's
 * migrations, a kept one made with an earlier prefix of them (an older commit of the same line)
 * is copied (CREATE DATABASE … TEMPLATE, minutes faster than seeding) and migrated forward by the
 * product, as an upgraded install would be; failing that, it is seeded.
 */
export async function seededDatabase(adminUrl: string, plans: number, log: (line: string) => void): Promise<string> {
  const family = `${databasePrefix()}_${sizeLabel(plans)}_`;
  const name = `${family}${migrationsTag()}`;
  const mine = migrationList();
  const admin = postgres(adminUrl, { onnotice: () => {}, max: 1 });
  try {
    const [exists] = await admin`SELECT 1 FROM pg_database WHERE datname = ${name}`;
    if (exists) {
      if (await seededWith(adminUrl, name)) return name;
      log(`# ${name} was not seeded to the end; seeding it again`);
      await admin.unsafe(`DROP DATABASE ${name} WITH (FORCE)`);
    }
    const kept = (await admin`SELECT datname FROM pg_database WHERE starts_with(datname, ${family}) ORDER BY datname`).map((r) => r.datname as string);
    for (const candidate of kept) {
      const theirs = await seededWith(adminUrl, candidate);
      if (!theirs || theirs.length === 0 || theirs.length > mine.length || theirs.some((m, i) => m !== mine[i])) continue;
      const started = performance.now();
      log(`# copying ${candidate} to ${name} and migrating it forward (kept for later runs)`);
      await admin.unsafe(`CREATE DATABASE ${name} TEMPLATE ${candidate}`);
      await migrateForward(adminUrl, name, mine);
      log(`# ${name} ready in ${((performance.now() - started) / 1000).toFixed(0)} s`);
      return name;
    }
    const started = performance.now();
    log(`# seeding ${name} with ${plans} plans (kept for later runs)`);
    await admin.unsafe(`CREATE DATABASE ${name} TEMPLATE ${await templatesDatabase(adminUrl, admin, log)}`);
    return await copiedTo(adminUrl, name, plans, mine, started, log);
  } finally {
    await admin.end({ timeout: 5 });
  }
}

/** The kept database holding only the plans the product took through its flow (recordTemplates), made when missing. */
async function templatesDatabase(adminUrl: string, admin: postgres.Sql, log: (line: string) => void): Promise<string> {
  const name = `${databasePrefix()}_templates_${migrationsTag()}`;
  const [exists] = await admin`SELECT 1 FROM pg_database WHERE datname = ${name}`;
  if (exists) {
    const db = postgres(databaseUrl(adminUrl, name), { onnotice: () => {}, max: 1 });
    const [row] = await db`SELECT to_regclass('bench_templates') IS NOT NULL AS done`.finally(() => db.end({ timeout: 5 }));
    if (row!.done) return name;
    await admin.unsafe(`DROP DATABASE ${name} WITH (FORCE)`);
  }
  const started = performance.now();
  await admin.unsafe(`CREATE DATABASE ${name}`);
  await recordTemplates(adminUrl, name);
  const db = postgres(databaseUrl(adminUrl, name), { onnotice: () => {}, max: 1 });
  await db.unsafe("CREATE TABLE bench_templates (recorded_at timestamptz NOT NULL DEFAULT now())").finally(() => db.end({ timeout: 5 }));
  log(`# recorded the seed's ${TEMPLATES} plans in ${name} in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  return name;
}

/** Copies a templates database's plans up to `plans`, then marks it seeded with the product's migrations. */
async function copiedTo(adminUrl: string, name: string, plans: number, mine: string[], started: number, log: (line: string) => void): Promise<string> {
  const db = postgres(databaseUrl(adminUrl, name), { onnotice: () => {}, max: 1 });
  try {
    await copyHistory(db, plans, log);
    await db.unsafe("DROP TABLE bench_templates");
    await db.unsafe("CREATE TABLE bench_seeded (plans integer NOT NULL, migrations text NOT NULL, seeded_at timestamptz NOT NULL DEFAULT now())");
    await db`INSERT INTO bench_seeded (plans, migrations) VALUES (${plans}, ${mine.join("\n")})`;
  } finally {
    await db.end({ timeout: 5 });
  }
  log(`# seeded ${name} in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  return name;
}

/** `countersign migrate` of the product on a copied database, then the copy records the migrations it now has. */
async function migrateForward(adminUrl: string, name: string, migrations: string[]): Promise<void> {
  const cli = countersignCommand();
  await outputOf([...cli.args, "migrate"], {
    cwd: productDir(),
    env: cleanEnv({ DATABASE_URL: databaseUrl(adminUrl, name), COUNTERSIGN_CONFIG: "/dev/null" }),
  });
  const db = postgres(databaseUrl(adminUrl, name), { onnotice: () => {}, max: 1 });
  try {
    await db`UPDATE bench_seeded SET migrations = ${migrations.join("\n")}`;
    await db.unsafe("VACUUM ANALYZE");
  } finally {
    await db.end({ timeout: 5 });
  }
}

/** The product takes TEMPLATES plans through the whole flow, each applied and every Slack call delivered. */
async function recordTemplates(adminUrl: string, database: string): Promise<void> {
  const stack = await startStack({ adminUrl, database, contacts: TEMPLATES });
  try {
    // All at once: each on its own contact, so none goes stale on another's write.
    await Promise.all(
      Array.from({ length: TEMPLATES }, async (_, i) => {
        const plan = await stack.submit(i + 1);
        if ((await clickApprove(stack, plan)) !== 200) throw new Error("seed: the Approve click was refused");
        await until(`seed plan ${plan.id} to be applied`, async () => (await planStatus(stack, plan.id)) === "applied");
      }),
    );
    await until("the seed's Slack posts and updates to be delivered", async () => (await undelivered(stack.sql)) === 0);
  } finally {
    await stack.stop();
  }
}

interface Column {
  name: string;
  type: string;
  serial: boolean;
}

async function columnsOf(db: postgres.Sql, table: string): Promise<Column[]> {
  const rows = await db`
    SELECT column_name, data_type, coalesce(column_default LIKE 'nextval(%', false) AS serial
      FROM information_schema.columns
     WHERE table_schema = 'public' AND table_name = ${table} AND is_generated = 'NEVER'
     ORDER BY ordinal_position`;
  return rows.map((r) => ({ name: r.column_name as string, type: r.data_type as string, serial: r.serial as boolean }));
}

/** The i-th copy's id of a template plan: deterministic, so a child row finds its plan. */
const copiedId = (column: string) => `md5(t.${column}::text || ':' || g)::uuid`;

/** What each column of a copy holds: a new plan id, unique values made unique, times moved back by 20 s per copy. */
function expression(table: string, column: Column): string | undefined {
  const c = `t."${column.name}"`;
  if (column.serial) return undefined; // its own default
  if (table === "plans" && column.name === "id") return copiedId("id");
  if (column.name === "plan_id") return copiedId("plan_id");
  if (table === "plans" && (column.name === "idempotency_key" || column.name === "claim_token"))
    return `CASE WHEN ${c} IS NULL THEN NULL ELSE ${c} || ':' || g END`;
  if (column.type === "timestamp with time zone") return `${c} - g * interval '20 seconds'`;
  // An audit chain's links, renamed alike in each copy: every copy is a chain of its own (unique
  // links stay unique) with the template's shape. The copies do not verify; nothing here verifies.
  if (table !== "plans" && (column.name === "hash" || column.name === "prev_hash"))
    return `'sha256:' || encode(sha256(convert_to(${c} || ':' || g, 'UTF8')), 'hex')`;
  return c;
}

async function copyHistory(db: postgres.Sql, plans: number, log: (line: string) => void): Promise<void> {
  const templates = (await db`SELECT id FROM plans ORDER BY created_at`).map((r) => r.id as string);
  const copies = Math.ceil((plans - templates.length) / templates.length);
  const children = (
    await db`
    SELECT table_name FROM information_schema.columns
     WHERE table_schema = 'public' AND column_name = 'plan_id' AND table_name <> 'plans'
     ORDER BY table_name`
  ).map((r) => r.table_name as string);
  const statements: string[] = [];
  for (const table of ["plans", ...children]) {
    const columns = (await columnsOf(db, table)).flatMap((column) => {
      const value = expression(table, column);
      return value === undefined ? [] : [{ name: column.name, value }];
    });
    const key = table === "plans" ? "id" : "plan_id";
    statements.push(`INSERT INTO "${table}" (${columns.map((c) => `"${c.name}"`).join(", ")})
      SELECT ${columns.map((c) => c.value).join(", ")}
        FROM "${table}" t CROSS JOIN generate_series($1::int, $2::int) AS g
       WHERE t."${key}" = ANY($3::uuid[])`);
  }
  for (let from = 1; from <= copies; from += Math.floor(CHUNK / templates.length)) {
    const to = Math.min(copies, from + Math.floor(CHUNK / templates.length) - 1);
    await db.begin(async (tx) => {
      // A restore's shortcut: no triggers or foreign-key checks while copying rows already checked once.
      await tx.unsafe("SET LOCAL session_replication_role = replica");
      for (const statement of statements) await tx.unsafe(statement, [from, to, templates]);
    });
    log(`#   ${templates.length * (to + 1)} plans`);
  }
  // Plans copied with triggers off are not in the bound the agent limits go by (agent_admissions,
  // kept by a trigger): it is recounted from the plans, where the product has it.
  await db.unsafe(`DO $$ BEGIN IF to_regclass('agent_admissions') IS NOT NULL THEN
    DELETE FROM agent_admissions;
    INSERT INTO agent_admissions (agent_id, slot, admitted) SELECT agent_id, 8, count(*) FROM plans GROUP BY agent_id;
  END IF; END $$`);
  for (const table of ["plans", ...children]) await db.unsafe(`VACUUM ANALYZE "${table}"`);
}
