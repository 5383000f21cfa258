/**
 * The floors: what PostgreSQL and HTTP themselves cost for the work the product is required to
 * do, with the product's drivers (postgres.js; node:http for the target, floor-http.ts). Floor
 * rows go to `bench_floor.*`, copies of the product's own tables (`LIKE … INCLUDING ALL`: same columns, defaults and indexes)
 * in the product's database, filled from rows the product itself wrote, so they are as wide.
 */
import { randomBytes, randomUUID } from "node:crypto";
import type postgres from "postgres";
import { getTarget, patchTarget } from "./floor-http.ts";
import { epochNow, READ_TOKEN, WRITE_TOKEN, type Stack } from "./stack.ts";

export type Row = Record<string, unknown>;

/** A plan row the product wrote, with its first audit event and first outbox row, and its agent's key hash. */
export interface Templates {
  plan: Row;
  audit: Row;
  outbox: Row;
  agentKeyHash: string;
}

const FLOOR_TABLES = ["plans", "audit_events", "outbox"] as const;

export async function createFloorTables(sql: postgres.Sql): Promise<void> {
  await sql.unsafe("CREATE SCHEMA IF NOT EXISTS bench_floor");
  for (const table of FLOOR_TABLES) await sql.unsafe(`CREATE TABLE IF NOT EXISTS bench_floor.${table} (LIKE public.${table} INCLUDING ALL)`);
}

/** The newest plan the product stored, with its first audit event and outbox row. */
export async function captureTemplates(sql: postgres.Sql): Promise<Templates> {
  const [plan] = await sql`SELECT * FROM plans ORDER BY created_at DESC LIMIT 1`;
  if (!plan) throw new Error("bench: the product stored no plan to copy the floor's rows from");
  const [audit] = await sql`SELECT * FROM audit_events WHERE plan_id = ${plan.id as string} ORDER BY id LIMIT 1`;
  const [outbox] = await sql`SELECT * FROM outbox WHERE plan_id = ${plan.id as string} ORDER BY id LIMIT 1`;
  if (!audit || !outbox) throw new Error(`bench: plan ${plan.id as string} has no ${audit ? "outbox row" : "audit event"} to copy the floor's rows from`);
  const [agent] = await sql`SELECT key_hash FROM agents WHERE id = ${plan.agent_id as string}`;
  if (!agent) throw new Error(`bench: plan ${plan.id as string} has no agent to read the floor's key from`);
  return { plan, audit, outbox, agentKeyHash: String(agent.key_hash) };
}

/**
 * The intake floor, whole: the reads any submit must make, then its write. The agent's key is read
 * first (the plain key lookup other agent requests use, on the product's agents table: no target
 * is read for an unknown key), then `read` (the target's GET), then the insert. A product submit
 * does more, which the floor leaves out as the product's own work: its key read also sums the
 * agent's admissions (limits), its insert runs the admission guard, a trigger and the foreign
 * key, and it writes an outbox row per sink (two in the bench).
 */
export async function floorSubmit(sql: postgres.Sql, t: Templates, read: () => Promise<unknown>): Promise<string> {
  const [agent] = await sql.unsafe("SELECT id, name FROM agents WHERE key_hash = $1 AND revoked_at IS NULL", [t.agentKeyHash], { prepare: true });
  if (!agent) throw new Error("floor: the agent key was not found");
  await read();
  return floorInsertPlan(sql, t);
}

/** The template's columns for a new plan: a new id, and no value that must be unique. */
function planRow(t: Templates, id: string, status: string): Row {
  return {
    ...t.plan,
    id,
    status,
    idempotency_key: null,
    claim_token: null,
    grant: null,
    grant_expires_at: null,
    lease_expires_at: null,
    outcome: null,
    created_at: new Date(),
    updated_at: new Date(),
  };
}

/**
 * A child row of the template for another plan: its serial id and the transaction id an audit
 * event records (`xid`, where the schema has it) left to their defaults, as the product leaves
 * them; audit hash links made new, as they are unique per chain.
 */
function childRow(row: Row, planId: string): Row {
  const { id: _serial, xid: _xid, ...rest } = row;
  const links = Object.fromEntries(["hash", "prev_hash"].filter((k) => k in rest).map((k) => [k, `sha256:${randomBytes(32).toString("hex")}`]));
  return { ...rest, ...links, plan_id: planId };
}

/**
 * The intake floor's write: three inserts (plan, audit event, outbox row) in one statement, a
 * transaction of its own, as the product stores a new plan (store-new-plan.ts). One statement, not
 * BEGIN, three inserts, COMMIT: those five round trips run at about half this statement's rate
 * (1 623 against 3 363 plans/s, 8 in flight, database only, load 1–2.5), which would make the
 * floor slower than PostgreSQL needs to be for the same rows.
 */
export async function floorInsertPlan(sql: postgres.Sql, t: Templates, status = "pending"): Promise<string> {
  const id = randomUUID();
  await sql`WITH plan AS (INSERT INTO bench_floor.plans ${sql(planRow(t, id, status))}),
    audit AS (INSERT INTO bench_floor.audit_events ${sql(childRow(t.audit, id))})
    INSERT INTO bench_floor.outbox ${sql(childRow(t.outbox, id))}`;
  return id;
}

/** The intake floor's read: one GET of the target, its body read and parsed. */
export function floorGet(stack: Stack, contact: number): Promise<{ etag: string; body: unknown }> {
  return getTarget(stack.targetUrl, `/contacts/${contact}`, READ_TOKEN);
}

/**
 * The approve → PATCH floor: GET (the approval's re-check of the target), UPDATE
 * (the decision), GET (the executor's re-read), PATCH with If-Match; resolves with milliseconds
 * from the start to the target receiving the PATCH (the product's figure ends there too), after
 * the closing UPDATE (recording the outcome), which is not timed.
 */
export async function floorApply(stack: Stack, planId: string, contact: number): Promise<number> {
  const path = `/contacts/${contact}`;
  const arrived = stack.nextWrite(path);
  const started = epochNow();
  await floorGet(stack, contact);
  const [moved] =
    await stack.sql`UPDATE bench_floor.plans SET status = 'approved', updated_at = now() WHERE id = ${planId} AND status = 'pending' RETURNING id`;
  if (!moved) throw new Error(`floor: plan ${planId} was not pending`);
  const { etag } = await floorGet(stack, contact);
  await patchTarget(stack.targetUrl, path, WRITE_TOKEN, etag, { email: `floor-${planId.slice(0, 8)}@new.example` });
  const elapsed = (await arrived) - started;
  await stack.sql`UPDATE bench_floor.plans SET status = 'applied', updated_at = now() WHERE id = ${planId} AND status = 'approved'`;
  return elapsed;
}
