import { createHash } from "node:crypto";

/**
 * The `postgres.row` demo of `countersign start`, the part without a database driver:
 * its names, its config block and what `start` prints. Provisioning (which loads postgres.js) is
 * in provision-postgres-row-demo.ts, imported only when DATABASE_URL is set.
 */

/** The target name the demo config gives the database. */
export const PG_DEMO_TARGET = "crm";
/** Variables the demo config reads the two connection URLs from: the server gets the first, the executor both. */
export const PG_DEMO_ENV = { read: "COUNTERSIGN_DEMO_CRM_READ_URL", write: "COUNTERSIGN_DEMO_CRM_WRITE_URL" } as const;
/**
 * The names are derived from DATABASE_URL's database, exactly as PostgreSQL spells it: a readable
 * prefix and a short hash of the exact name (`<db>_demo_<hash>`, `…_read`, `…_write`), so two
 * Countersigns on different databases of one server (parallel test runs, staging beside a trial)
 * never share a demo, not even `a-b`, `a_b` and `A_B`, whose prefixes are alike; roles are
 * server-wide, hence the prefix. Throws on a URL it cannot read (several `host:port`s, a bad %-escape).
 */
export function demoDatabaseNames(databaseUrl: string): { database: string; readRole: string; writeRole: string } {
  const url = new URL(databaseUrl);
  // No database in the URL: PostgreSQL connects to the one named like the user.
  const own = decodeURIComponent(url.pathname.replace(/^\//, "")) || decodeURIComponent(url.username) || "postgres";
  const hash = createHash("sha256").update(own).digest("hex").slice(0, 8);
  // Plain lower-case identifiers, short enough that the longest suffix still fits in 63 bytes.
  const prefix = own
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, "_")
    .slice(0, 63 - `_demo_${hash}_write`.length);
  const database = `${prefix}_demo_${hash}`;
  return { database, readRole: `${database}_read`, writeRole: `${database}_write` };
}

/** The demo target's config block: the URLs come from the environment, so the file holds no password. */
export function postgresRowDemoTarget(): Record<string, unknown> {
  return {
    adapter: "postgres.row",
    read: { url: `\${${PG_DEMO_ENV.read}}` },
    write: { url: `\${${PG_DEMO_ENV.write}}` },
    tables: { contacts: { key: ["id"], version: "updated_at", versionSetBy: "trigger" } },
    allow: { ops: ["update", "insert"], tables: ["contacts"] },
  };
}

/** A plan that changes one row of the demo database, as the demo agent would send it. */
export function postgresRowDemoCurl(apiUrl: string, key: string): string {
  const body = JSON.stringify({
    title: "Update the email of Bruno Costa in the CRM database",
    reason: "Customer changed provider, ticket 4412",
    onBehalfOf: "U0REQUESTER",
    actions: [{ kind: "postgres.row", target: PG_DEMO_TARGET, table: "contacts", key: { id: 2 }, op: "update", values: { email: "bruno@new.example" } }],
  });
  return `curl -s ${apiUrl}/v1/plans -H 'Authorization: Bearer ${key}' -H 'Content-Type: application/json' -d '${body}'`;
}

/** A read-only look at the row, with the role that may only SELECT. */
export function postgresRowLookCommand(readUrl: string): string {
  return `psql '${readUrl}' -c 'SELECT * FROM contacts WHERE id = 2'`;
}

export const PG_DEMO_HINT =
  "postgres.row demo: off. Set DATABASE_URL to a PostgreSQL server whose user may create databases and roles, and start again, to add a 'crm' database target";
