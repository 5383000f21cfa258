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

/** A connection for one side, reading or writing; `variable` names the URL in the page's example. */
const connection = (variable: string) =>
  z.strictObject({
    url: z
      .string()
      .regex(/^postgres(ql)?:\/\//, "must be a postgres:// URL")
      .superRefine((url, ctx) => {
        for (const message of urlQueryProblems(url)) ctx.addIssue({ code: "custom", message });
      })
      .meta({
        description: `A postgres:// URL; \`\${VAR}\` reads the environment. Its query may set only ${[...URL_QUERY_ALLOWED].join(", ")}.`,
        examples: [`\${${variable}}`],
      }),
  });

export const PostgresRowTable = z.strictObject({
  key: z
    .array(Identifier)
    .min(1)
    .meta({ description: "The columns that find one row: a primary key or a unique index without a predicate (checked when read).", examples: [["id"]] }),
  version: Identifier.optional().meta({
    description:
      "A column every writer of the table changes on every write (an integer counter or a timestamptz; compared as text, microseconds included). Without it the row's xmin is the version, which a dump and restore resets (open plans go stale).",
    examples: ["updated_at"],
  }),
  versionSetBy: z
    .enum(["countersign", "trigger"])
    .default("countersign")
    .meta({
      description: "Who moves the version on a write: Countersign itself (counter + 1, or the clock), or a trigger of the table's.",
      examples: ["trigger"],
    }),
  schema: Identifier.default("public").meta({ description: "The table's schema.", examples: ["crm"] }),
});
export type PostgresRowTable = z.output<typeof PostgresRowTable>;

export const PostgresRowTarget = z
  .strictObject({
    adapter: z.literal("postgres.row").describe("The kind of target: one row of a PostgreSQL table, found by its key."),
    read: connection("CRMDB_READ_URL").describe(
      "A role that may only SELECT the tables: previews and re-checks. The server's only credential for this target.",
    ),
    write: connection("CRMDB_WRITE_URL")
      .optional()
      .describe("A role with SELECT and the writes `allow.ops` needs on the tables. Only the executor resolves this, and refuses to start without it."),
    tables: z
      .record(Identifier, PostgresRowTable)
      .refine((t) => Object.keys(t).length > 0, "name at least one table")
      .describe(
        "What the adapter can address, by table name (plain SQL identifiers). Values take one JSON form per column type: int8 and numeric as decimal strings, timestamptz ISO-8601 UTC with microseconds, bytea base64, date `YYYY-MM-DD`; other types are refused.",
      ),
    allow: z
      .strictObject({
        ops: z
          .array(Op)
          .min(1)
          .meta({ description: "The ops agents may propose here.", examples: [["update", "insert"]] }),
        tables: z
          .array(Identifier)
          .min(1)
          .meta({ description: "The tables agents may propose changes to: a subset of `tables`.", examples: [["contacts"]] }),
      })
      .optional()
      .describe("What agents may propose here. Deny by default: without it, every plan for this target is refused."),
    timeoutMs: z
      .int()
      .positive()
      .max(60_000)
      .default(5_000)
      .meta({ description: "Milliseconds a statement may take.", examples: [5000] }),
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
