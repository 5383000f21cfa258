import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { demoDatabaseNames, PG_DEMO_HINT } from "../../src/demo/postgres-row-demo.ts";
import { OPEN_STATUSES } from "../../src/plan/lifecycle.ts";
import type { PlanStatus } from "../../src/plan/status.ts";
import { startCli } from "../support/cli.ts";
import { postgresKind } from "../support/databases.ts";
import { freePort } from "../support/free-port.ts";
import { testGrantKeys } from "../support/harness.ts";

/**
 * `countersign start` adds a postgres.row demo target (its own database, a read role
 * and a write role) when DATABASE_URL is set, and says how to enable it otherwise. The real built
 * CLI, on the local PostgreSQL; each test's Countersign database has a random name, and the demo
 * database and roles are derived from it, so parallel runs never share them.
 */
const READY = /Ctrl-C stops everything/;
/**
 * Waits are for a condition (the ready line, the plan's final status, the process's exit), each
 * bounded far above what it takes: a fresh embedded start took 38 s at load 17, and this file once
 * hit a 120 s bound that was both the ready wait and the whole test's. Each test's own bound
 * covers all its waits, so the condition that did not come is the one named.
 */
const START_MS = 240_000;
const STOP_MS = 60_000;
const SETTLE_MS = 180_000;
/** A test's bound: its starts, its stops, and what else it waits for. */
const budget = (starts: number, extraMs = 0) => starts * (START_MS + STOP_MS) + extraMs + 30_000;

// Each test sends SIGINT the moment the banner appears. `start` once listened for signals only
// after printing it, so under load the signal sometimes came first and killed it outright (exit
// code null), orphaning its executor child; it now catches them from its first line
// (src/cli/stop-signals.ts, test/e2e/stop-signals.test.ts).
describe("countersign start: the postgres.row demo", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "countersign-start-pg-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it(
    "without DATABASE_URL (embedded PGlite) prints one line saying how to enable it, and runs the http.json demo",
    async () => {
      const cwd = mkdtempSync(path.join(dir, "embedded-"));
      const app = await startCli(["start"], { cwd, env: { PORT: String(await freePort()) }, ready: READY, timeoutMs: START_MS });
      try {
        const output = app.output();
        expect(output.split("\n").filter((line) => line.includes("postgres.row demo"))).toEqual([`  ${PG_DEMO_HINT}`]);
        expect(output).toMatch(/targets: contacts$/m);
        expect(output).not.toContain('"kind":"postgres.row"');
        expect(output).toContain(
          "one process: 'start' hands the executor the demo's write credentials and runs the http.json demo target, so it could write too",
        );
      } finally {
        expect(await stopped(app)).toBe(0);
      }
    },
    budget(1),
  );

  describe.skipIf(!postgresKind)("with DATABASE_URL", () => {
    const base = process.env.TEST_DATABASE_URL ?? "postgres://unset";
    const suffix = randomBytes(5).toString("hex");
    const databaseUrl = (database: string, user?: string) => {
      const url = new URL(base);
      url.pathname = `/${database}`;
      if (user) url.username = user;
      return url.toString();
    };
    const full = databaseUrl(`cs_start_${suffix}`);
    const flow = databaseUrl(`cs_start_${suffix}_flow`);
    /** A user who owns its database but may create neither databases nor roles. */
    const plainUser = `cs_start_${suffix}_plain`;
    const plain = databaseUrl(`cs_start_${suffix}_plain`, plainUser);
    let admin: postgres.Sql;
    let grantEnv: Record<string, string>;

    beforeAll(async () => {
      admin = postgres(base, { onnotice: () => {}, max: 1 });
      await admin.unsafe(`CREATE DATABASE cs_start_${suffix}`);
      await admin.unsafe(`CREATE DATABASE cs_start_${suffix}_flow`);
      await admin.unsafe(`CREATE ROLE ${plainUser} LOGIN NOCREATEDB NOCREATEROLE`);
      await admin.unsafe(`CREATE DATABASE cs_start_${suffix}_plain OWNER ${plainUser}`);
      const keys = await testGrantKeys();
      // The private key alone: `start` gives its executor the public half of the key it holds.
      grantEnv = { COUNTERSIGN_GRANT_PRIVATE_KEY: keys.privatePem };
    });
    afterAll(async () => {
      for (const url of [full, flow, plain]) {
        const demo = demoDatabaseNames(url);
        await admin.unsafe(`DROP DATABASE IF EXISTS ${demo.database} WITH (FORCE)`);
        await admin.unsafe(`DROP ROLE IF EXISTS ${demo.readRole}`);
        await admin.unsafe(`DROP ROLE IF EXISTS ${demo.writeRole}`);
      }
      await admin.unsafe(`DROP DATABASE IF EXISTS cs_start_${suffix} WITH (FORCE)`);
      await admin.unsafe(`DROP DATABASE IF EXISTS cs_start_${suffix}_flow WITH (FORCE)`);
      await admin.unsafe(`DROP DATABASE IF EXISTS cs_start_${suffix}_plain WITH (FORCE)`);
      await admin.unsafe(`DROP ROLE IF EXISTS ${plainUser}`);
      await admin.end({ timeout: 5 });
    });

    const startOn = async (cwd: string, url: string) => {
      const port = await freePort();
      const app = await startCli(["start"], { cwd, env: { ...grantEnv, DATABASE_URL: url, PORT: String(port) }, ready: READY, timeoutMs: START_MS });
      return { app, port };
    };
    const readUrlIn = (output: string) => /psql '(postgres:\/\/[^']+)'/.exec(output)?.[1];

    it(
      "provisions its own database with a SELECT-only read role and a write role, idempotently on every start; the read role really cannot write",
      async () => {
        const cwd = mkdtempSync(path.join(dir, "provision-"));
        const names = demoDatabaseNames(full);
        expect(names.database).toMatch(new RegExp(`^cs_start_${suffix}_demo_[0-9a-f]{8}$`));
        const first = await startOn(cwd, full);
        let readUrl: string | undefined;
        try {
          const output = first.app.output();
          expect(output).toMatch(/targets: contacts, crm$/m);
          expect(output).toContain(`demo target: crm, table contacts of the PostgreSQL database "${names.database}"`);
          expect(output).toContain("may approve plans for 'contacts' and 'crm'");
          readUrl = readUrlIn(output);
          expect(readUrl).toBeDefined();
          expect(new URL(readUrl!).username).toBe(names.readRole);
          // The write credential goes to the executor: the banner never prints it, and says what else holds the database.
          expect(output).not.toContain(names.writeRole + ":");
          expect(output).toContain(
            "one process: 'start' hands the executor the demo's write credentials, runs the http.json demo target and owns the demo database (as DATABASE_URL's user), so it could write too",
          );
        } finally {
          expect(await stopped(first.app)).toBe(0);
        }

        // The roles: log-in roles without any power of their own.
        const roles = await admin<{ rolname: string; rolsuper: boolean; rolcreaterole: boolean; rolcreatedb: boolean; rolbypassrls: boolean }[]>`
        SELECT rolname, rolsuper, rolcreaterole, rolcreatedb, rolbypassrls FROM pg_roles WHERE rolname IN (${names.readRole}, ${names.writeRole}) ORDER BY rolname`;
        expect(roles.map((r) => r.rolname)).toEqual([names.readRole, names.writeRole]);
        for (const role of roles) expect([role.rolsuper, role.rolcreaterole, role.rolcreatedb, role.rolbypassrls]).toEqual([false, false, false, false]);

        // The read role reads, and every way of writing is refused by PostgreSQL itself.
        const reader = postgres(readUrl!, { onnotice: () => {}, max: 1 });
        try {
          const rows = await reader<{ id: number; name: string }[]>`SELECT id, name FROM contacts ORDER BY id`;
          expect(rows.map((r) => r.name)).toEqual(["Ana Lima", "Bruno Costa", "Carla Dias"]);
          for (const statement of [
            "UPDATE contacts SET email = 'x@example.com' WHERE id = 1",
            "INSERT INTO contacts (id, name) VALUES (99, 'Nobody')",
            "DELETE FROM contacts WHERE id = 3",
            "TRUNCATE contacts",
            "CREATE TABLE sneaky (x int)",
          ]) {
            await expect(reader.unsafe(statement), statement).rejects.toMatchObject({ code: "42501" });
          }
        } finally {
          await reader.end({ timeout: 5 });
        }
        const demoDb = postgres(databaseUrl(names.database), { onnotice: () => {}, max: 1 });
        try {
          const [grants] = await demoDb<{ read_write: boolean; write_update: boolean; write_truncate: boolean; public_connect: boolean }[]>`
          SELECT has_table_privilege(${names.readRole}, 'contacts', 'INSERT, UPDATE, DELETE, TRUNCATE') AS read_write,
                 has_table_privilege(${names.writeRole}, 'contacts', 'SELECT, INSERT, UPDATE, DELETE') AS write_update,
                 has_table_privilege(${names.writeRole}, 'contacts', 'TRUNCATE') AS write_truncate,
                 has_database_privilege('public', ${names.database}, 'CONNECT') AS public_connect`;
          expect(grants).toEqual({ read_write: false, write_update: true, write_truncate: false, public_connect: false });
          // Someone widens the read role and changes a row; the next start takes the grant back and keeps the row.
          await demoDb.unsafe(`GRANT UPDATE ON contacts TO ${names.readRole}`);
          await demoDb`UPDATE contacts SET email = 'ana@kept.example' WHERE id = 1`;
        } finally {
          await demoDb.end({ timeout: 5 });
        }

        const again = await startOn(cwd, full);
        try {
          // The same credentials as before (kept in the data dir), so printed lines stay valid.
          expect(readUrlIn(again.app.output())).toBe(readUrl);
          const reader = postgres(readUrl!, { onnotice: () => {}, max: 1 });
          try {
            await expect(reader.unsafe("UPDATE contacts SET email = 'x@example.com' WHERE id = 1")).rejects.toMatchObject({ code: "42501" });
            const [ana] = await reader<{ email: string }[]>`SELECT email FROM contacts WHERE id = 1`;
            expect(ana!.email).toBe("ana@kept.example");
          } finally {
            await reader.end({ timeout: 5 });
          }
        } finally {
          expect(await stopped(again.app)).toBe(0);
        }
        expect(existsSync(path.join(cwd, ".countersign", "demo-postgres.json"))).toBe(true);
      },
      budget(2),
    );

    it(
      "the printed postgres.row curl line proposes a row change previewed with the read role (nothing written); approved over HTTP, the executor applies it",
      async () => {
        const cwd = mkdtempSync(path.join(dir, "flow-"));
        const { app, port } = await startOn(cwd, flow);
        const origin = `http://localhost:${port}`;
        const reader = postgres(readUrlIn(app.output())!, { onnotice: () => {}, max: 1, connection: { TimeZone: "UTC", DateStyle: "ISO" } });
        try {
          const output = app.output();
          const key = /Bearer (csk_[A-Za-z0-9_-]+)/.exec(output)![1]!;
          const body = [...output.matchAll(/-d '(\{.*\})'$/gm)].map((m) => m[1]!).find((b) => b.includes('"postgres.row"'));
          expect(body).toBeDefined();
          const row = async () => (await reader<{ email: string; updated_at: string }[]>`SELECT email, updated_at::text FROM contacts WHERE id = 2`)[0]!;
          const before = await row();

          const res = await fetch(`${origin}/v1/plans`, {
            method: "POST",
            headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
            body,
          });
          const plan = (await res.json()) as {
            id: string;
            hash: string;
            status: string;
            preview: {
              actions: {
                target: string;
                path: string;
                op: string;
                before: { email: string };
                after: { email: string };
                version: string | null;
                changes: { path: string; from: unknown; to: unknown }[];
              }[];
            };
          };
          expect(res.status, JSON.stringify(plan)).toBe(201);
          expect(plan.status).toBe("pending");
          const [action] = plan.preview.actions;
          expect(action).toMatchObject({
            target: "crm",
            path: "/contacts/2",
            op: "update",
            before: { email: "bruno@example.com" },
            after: { email: "bruno@new.example" },
          });
          expect(action!.changes).toEqual([{ path: "/email", from: "bruno@example.com", to: "bruno@new.example" }]);
          expect(action!.version).toBe(before.updated_at); // the version column as text, as the adapter compares it
          // The preview read; it wrote nothing (a write would have moved updated_at through the trigger).
          expect(await row()).toEqual(before);

          // The demo reviewer approves through the browser door, without a browser: the printed login link, then the plan page's form.
          const loginUrl = /^\s+(http:\/\/\S+\/login\/\S+)$/m.exec(output)![1]!;
          const login = await fetch(loginUrl, { method: "POST", redirect: "manual", headers: { origin } });
          expect(login.status).toBe(303);
          const cookie = `cs_session=${/cs_session=([^;]+)/.exec(login.headers.get("set-cookie") ?? "")![1]}`;
          const page = await (await fetch(`${origin}/plans/${plan.id}`, { headers: { cookie } })).text();
          const csrf = /name="_csrf" value="([^"]+)"/.exec(page)![1]!;
          const approve = await fetch(`${origin}/plans/${plan.id}/approve`, {
            method: "POST",
            redirect: "manual",
            headers: { cookie, origin, "content-type": "application/x-www-form-urlencoded" },
            body: new URLSearchParams({ hash: plan.hash, _csrf: csrf }).toString(),
          });
          expect(approve.status).toBe(303);

          const done = await settled(`${origin}/v1/plans/${plan.id}`, key);
          expect(done.status, JSON.stringify(done)).toBe("applied");
          expect(done.outcome.actions[0]).toMatchObject({ status: "applied", verified: true });
          const after = await row();
          expect(after.email).toBe("bruno@new.example");
          expect(after.updated_at > before.updated_at).toBe(true);
        } finally {
          await reader.end({ timeout: 5 });
          expect(await stopped(app)).toBe(0);
        }
      },
      budget(1, SETTLE_MS),
    );

    it(
      "when the DATABASE_URL user may not create databases, says why and carries on with the http.json demo only",
      async () => {
        const cwd = mkdtempSync(path.join(dir, "plain-"));
        const { app, port } = await startOn(cwd, plain);
        try {
          const output = app.output();
          expect(output).toMatch(/targets: contacts$/m);
          expect(output).toMatch(
            new RegExp(
              `postgres\\.row demo: not set up, could not create the database "${demoDatabaseNames(plain).database}" as user "${plainUser}": permission denied to create database \\(the demo needs a DATABASE_URL user with CREATEDB and CREATEROLE\\); only the http\\.json demo runs`,
            ),
          );
          // The http.json demo works as ever.
          const key = /Bearer (csk_[A-Za-z0-9_-]+)/.exec(output)![1]!;
          const body = /-d '(\{.*\})'$/m.exec(output)![1]!;
          const res = await fetch(`http://127.0.0.1:${port}/v1/plans`, {
            method: "POST",
            headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
            body,
          });
          expect(res.status).toBe(201);
        } finally {
          expect(await stopped(app)).toBe(0);
        }
      },
      budget(1),
    );
  });
});

/** The exit code after SIGINT, or a failure naming the wait when the process does not exit in STOP_MS. */
async function stopped(app: { child: ChildProcess; stop(): Promise<number | null>; output(): string }): Promise<number | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      // Nothing of it may outlive the test: the executor child (its pid is in the banner) too.
      const executorPid = Number(/executor: pid (\d+)/.exec(app.output())?.[1]);
      if (executorPid) {
        try {
          process.kill(executorPid, "SIGKILL");
        } catch {
          // already gone
        }
      }
      app.child.kill("SIGKILL");
      reject(new Error(`start did not exit within ${STOP_MS} ms of SIGINT:\n${app.output()}`));
    }, STOP_MS);
  });
  try {
    return await Promise.race([app.stop(), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The plan once it leaves the open statuses, long-polling /wait (60 s at most per call) until SETTLE_MS have passed. */
async function settled(planUrl: string, key: string): Promise<{ status: string; outcome: { actions: { status: string; verified?: boolean | null }[] } }> {
  const deadline = Date.now() + SETTLE_MS;
  for (;;) {
    const plan = (await (await fetch(`${planUrl}/wait?timeout=60`, { headers: { authorization: `Bearer ${key}` } })).json()) as {
      status: string;
      outcome: { actions: { status: string; verified?: boolean | null }[] };
    };
    if (!OPEN_STATUSES.includes(plan.status as PlanStatus) || Date.now() > deadline) return plan;
  }
}
