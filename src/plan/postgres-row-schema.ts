import { z } from "zod";
import { SHA256_PATTERN } from "./fingerprint.ts";
import type { Json } from "./json.ts";

/** SQL identifiers a config may name: plain ones, so what a reviewer reads is what is quoted. */
const Identifier = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,62}$/, "must be a plain SQL identifier (letters, digits, '_'; not starting with a digit)");

export const POSTGRES_ROW_OPS = ["update", "insert", "delete"] as const;
const Op = z.enum(POSTGRES_ROW_OPS);

/**
 * What a connection URL's query may say: how to reach the server (TLS, which host of several).
 * postgres.js sends every other query parameter as a session setting that wins over the
 * adapter's own (`?statement_timeout=0` would lift the bound the lost-answer wait and the
 * grant-expiry limit rely on; `TimeZone`, `DateStyle`, `search_path`, `options` change how rows
 * and versions read), or takes it over the adapter's pool settings (`prepare`, `max_lifetime` …).
 */
const URL_QUERY_ALLOWED = new Set(["sslmode", "ssl", "sslrootcert", "sslnegotiation", "target_session_attrs", "application_name"]);

/** Why the query of a postgres:// URL is refused, one message per parameter (never the URL itself: it may hold a password). */
export function urlQueryProblems(url: string): string[] {
  const at = url.indexOf("?");
  if (at < 0) return [];
  const problems: string[] = [];
  for (const [key, value] of new URLSearchParams(url.slice(at + 1).split("#")[0])) {
    const name = JSON.stringify(key.slice(0, 63));
    if (key === "sslrootcert" && value !== "system")
      problems.push(`the URL's query sets ${name} to a file; postgres.js reads only 'system' there (pass a CA through the environment's trust store instead)`);
    else if (!URL_QUERY_ALLOWED.has(key)) {
      problems.push(
        `the URL's query sets ${name}, which postgres.js would send as a session setting (or a pool option) over postgres.row's own (statement_timeout, lock_timeout, TimeZone, DateStyle, read-only …, which bound and read every write); remove it. The query may set only ${[...URL_QUERY_ALLOWED].join(", ")}; timeouts come from the target's timeoutMs`,
      );
    }
  }
  return problems;
}

const Connection = z.strictObject({
  url: z
    .string()
    .regex(/^postgres(ql)?:\/\//, "must be a postgres:// URL")
    .superRefine((url, ctx) => {
      for (const message of urlQueryProblems(url)) ctx.addIssue({ code: "custom", message });
    }),
});

export const PostgresRowTable = z.strictObject({
  /** The columns that find one row: a primary key or a unique index without a predicate (checked when read). */
  key: z.array(Identifier).min(1),
  /**
   * A column every writer of the table changes on every write (an integer counter or a
   * timestamptz). Without it the row's xmin is the version, which a dump and restore resets.
   */
  version: Identifier.optional(),
  /** Who moves the version on a write: Countersign itself (counter + 1, or the clock), or a trigger of the table's. */
  versionSetBy: z.enum(["countersign", "trigger"]).default("countersign"),
  schema: Identifier.default("public"),
});
export type PostgresRowTable = z.output<typeof PostgresRowTable>;

export const PostgresRowTarget = z
  .strictObject({
    adapter: z.literal("postgres.row"),
    read: Connection,
    /** Only the executor resolves this. */
    write: Connection.optional(),
    /** What the adapter can address. */
    tables: z.record(Identifier, PostgresRowTable).refine((t) => Object.keys(t).length > 0, "name at least one table"),
    /** What agents may propose: a subset of `tables`. Without it every action is refused. */
    allow: z.strictObject({ ops: z.array(Op).min(1), tables: z.array(Identifier).min(1) }).optional(),
    timeoutMs: z.int().positive().max(60_000).default(5_000),
  })
  .superRefine((target, ctx) => {
    for (const [i, table] of (target.allow?.tables ?? []).entries()) {
      if (!Object.hasOwn(target.tables, table))
        ctx.addIssue({
          code: "custom",
          path: ["allow", "tables", i],
          message: `allow.tables names '${table}', which is not in tables (${Object.keys(target.tables).join(", ")})`,
        });
    }
    for (const [name, table] of Object.entries(target.tables)) {
      if (table.version && table.key.includes(table.version))
        ctx.addIssue({ code: "custom", path: ["tables", name, "version"], message: "the version column cannot be a key column" });
    }
  });
export type PostgresRowTarget = z.output<typeof PostgresRowTarget>;

const jsonValue: z.ZodType<Json> = z.json();
const Scalar = z.union([z.string().max(1000), z.number()]);
const Values = z.record(z.string().min(1).max(63), jsonValue);

export const PostgresRowAction = z
  .strictObject({
    kind: z.literal("postgres.row"),
    target: z.string().min(1).max(100),
    table: z.string().min(1).max(63),
    key: z.record(z.string().min(1).max(63), Scalar),
    op: Op,
    values: Values.optional(),
  })
  .superRefine((action, ctx) => {
    if (action.op === "delete" && action.values !== undefined) ctx.addIssue({ code: "custom", path: ["values"], message: "op 'delete' takes no values" });
    if (action.op === "update" && (action.values === undefined || Object.keys(action.values).length === 0))
      ctx.addIssue({ code: "custom", path: ["values"], message: "op 'update' needs values (the columns it sets)" });
  });
export type PostgresRowAction = z.output<typeof PostgresRowAction>;

/** What the preview fixes: key and values in their canonical JSON forms, and the version read. */
export const PostgresRowPlanned = z.strictObject({
  kind: z.literal("postgres.row"),
  target: z.string(),
  path: z.string(),
  table: z.string(),
  op: Op,
  key: z.record(z.string(), jsonValue),
  values: z.record(z.string(), jsonValue).optional(),
  precondition: z.union([z.strictObject({ version: z.string() }), z.strictObject({ absent: z.literal(true) })]),
  beforeDigest: z.string().regex(SHA256_PATTERN),
  afterDigest: z.string().regex(SHA256_PATTERN),
});
export type PostgresRowPlanned = z.output<typeof PostgresRowPlanned>;
