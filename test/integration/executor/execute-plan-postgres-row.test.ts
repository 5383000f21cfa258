import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { TargetReader } from "../../../src/adapters/adapter.ts";
import { postgresRowAdapter } from "../../../src/adapters/postgres-row/postgres-row-adapter.ts";
import { PostgresRowTarget, type PostgresRowAction, type PostgresRowPlanned } from "../../../src/plan/postgres-row-schema.ts";
import { executePlan } from "../../../src/executor/execute-plan.ts";
import { type Claim } from "../../../src/contract/executor-api.ts";
import { issueGrant } from "../../../src/grant/grant.ts";
import { fingerprint } from "../../../src/plan/fingerprint.ts";
import { Outcome } from "../../../src/plan/outcome.ts";
import { PlanDocument } from "../../../src/plan/schema.ts";
import { openRowDatabase, type RowDatabase } from "../../support/adapters-postgres.ts";
import { postgresKind } from "../../support/databases.ts";
import { executionPorts } from "../../support/execution-ports.ts";
import { testGrantKeys } from "../../support/harness.ts";
import { tcpRelay } from "../../support/tcp-relay.ts";
import { waitFor } from "../../support/wait-for.ts";

const adminUrl = process.env.TEST_DATABASE_URL;
/** The statement timeout of the target's sessions: short, so a held row lock times the write out. */
const TIMEOUT_MS = 1500;

/**
 * `executePlan` on a `postgres.row` target with real roles: the executor acts on how
 * the adapter classes an error. A statement timeout or a lost connection is transient (retried
 * within the lease, a write only after revalidating); a permission the write role lacks is
 * permanent (reported at once).
 */
describe.skipIf(!postgresKind || !adminUrl)("the executor on a postgres.row target", () => {
  let db: RowDatabase;
  let target: PostgresRowTarget;
  let reader: TargetReader<PostgresRowAction, PostgresRowPlanned>;
  let n = 0;

  beforeAll(async () => {
    db = await openRowDatabase(adminUrl!);
    target = PostgresRowTarget.parse({
      adapter: "postgres.row",
      read: { url: db.readUrl },
      write: { url: db.writeUrl },
      tables: { contacts: { key: ["id"], version: "updated_at" } },
      allow: { ops: ["update"], tables: ["contacts"] },
      timeoutMs: TIMEOUT_MS,
    });
    reader = postgresRowAdapter().openReader("crmdb", target);
  });
  afterAll(async () => {
    await reader?.close();
    await db?.close();
  });
  beforeEach(async () => {
    n++;
    await db.admin`INSERT INTO contacts (id, name, email) VALUES (${n}, 'Ada', 'ada@old.example')`;
  });

  /** Previews with the read role, approves with the test key, and claims with a lease of `leaseMs`. */
  async function claimFor(id: number, leaseMs = 60_000): Promise<Claim> {
    const { planned, preview } = await reader.preview({
      kind: "postgres.row",
      target: "crmdb",
      table: "contacts",
      key: { id },
      op: "update",
      values: { email: "ada@new.example" },
    });
    const plan = PlanDocument.parse({
      v: 1,
      id: randomUUID(),
      environment: "test",
      agent: "agent-test",
      title: "row update",
      actions: [planned],
      policy: { approvers: ["U0ALICE"], requiredApprovals: 1, grantTtlSeconds: 600 },
      expiresAt: new Date(Date.now() + 900_000).toISOString(),
    });
    const now = new Date();
    const { token } = await issueGrant((await testGrantKeys()).signing, {
      planId: plan.id,
      planHash: fingerprint(plan),
      approvers: [{ user: "U0ALICE", via: "slack", at: now.toISOString() }],
      environment: "test",
      issuedAt: now,
      expiresAt: new Date(now.getTime() + 600_000),
    });
    return { plan, preview: { actions: [preview] }, grant: token, claimToken: randomUUID(), leaseExpiresAt: new Date(Date.now() + leaseMs).toISOString() };
  }
  async function execute(claim: Claim, configured: Record<string, PostgresRowTarget> = { crmdb: target }, now?: () => Date): Promise<Outcome> {
    const ports = executionPorts((await testGrantKeys()).verifying, configured, now);
    try {
      const outcome = await executePlan(claim, ports);
      expect(Outcome.parse(outcome)).toStrictEqual(outcome);
      return outcome;
    } finally {
      await ports.close();
    }
  }
  const emailOf = async (id: number) => (await db.admin<{ email: string }[]>`SELECT email FROM contacts WHERE id = ${id}`)[0]!.email;
  const waitingUpdates = async () =>
    (
      await db.admin<
        { n: number }[]
      >`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'UPDATE%'`
    )[0]!.n;

  it("applies with the write role: one write, verified", async () => {
    const claim = await claimFor(n);
    const writes = await db.writes();
    expect(await execute(claim)).toStrictEqual({
      status: "applied",
      actions: [{ index: 0, target: "crmdb", path: `/contacts/${n}`, status: "applied", verified: true }],
    });
    expect(await db.writes()).toBe(writes + 1);
    expect(await emailOf(n)).toBe("ada@new.example");
  });

  it("a write timed out behind a row lock is transient: revalidated, written again once the lock is gone, one write in all", async () => {
    const id = n;
    const claim = await claimFor(id);
    const writes = await db.writes();
    const locker = await db.admin.reserve();
    let executing: Promise<Outcome> | undefined;
    try {
      await locker`BEGIN`;
      await locker`SELECT 1 FROM contacts WHERE id = ${id} FOR UPDATE`;
      executing = execute(claim);
      await waitFor("the executor's UPDATE to wait for the row", async () => (await waitingUpdates()) > 0 || undefined, 30_000);
      // The statement timeout ends it (SQLSTATE 57014); only then is the row let go.
      await waitFor("the UPDATE to time out", async () => (await waitingUpdates()) === 0 || undefined, 30_000);
    } finally {
      await locker`ROLLBACK`;
      locker.release();
    }
    const outcome = await executing!;
    expect(outcome.status).toBe("applied");
    expect(outcome.actions).toStrictEqual([
      {
        index: 0,
        target: "crmdb",
        path: `/contacts/${id}`,
        status: "applied",
        verified: true,
        detail: expect.stringMatching(/^written after a failed attempt \(.*statement timeout/),
      },
    ]);
    expect(await db.writes()).toBe(writes + 1);
    expect(await emailOf(id)).toBe("ada@new.example");
  });

  it("a write the role is not allowed is permanent: failed at once, nothing written", async () => {
    const id = n;
    const claim = await claimFor(id);
    const writes = await db.writes();
    const role = new URL(db.writeUrl).username;
    await db.admin.unsafe(`REVOKE UPDATE ON contacts FROM ${role}`);
    try {
      const outcome = await execute(claim);
      expect(outcome.status).toBe("failed");
      expect(outcome.actions).toStrictEqual([
        {
          index: 0,
          target: "crmdb",
          path: `/contacts/${id}`,
          status: "failed",
          detail: expect.stringMatching(/was refused: permission denied for table contacts$/),
        },
      ]);
    } finally {
      await db.admin.unsafe(`GRANT UPDATE ON contacts TO ${role}`);
    }
    expect(await db.writes()).toBe(writes);
  });

  it("more than timeoutMs of the grant is left when the write starts, but its connection takes it all to open: expired, nothing written", async () => {
    const id = n;
    const claim = await claimFor(id);
    const writes = await db.writes();
    const relay = await tcpRelay(new URL(db.writeUrl));
    relay.connectDelayMs = TIMEOUT_MS + 200;
    const expiresAt = JSON.parse(Buffer.from(claim.grant.split(".")[1]!, "base64url").toString()).exp * 1000;
    try {
      // The executor's clock says the grant has timeoutMs + 300 ms left: enough to start the write.
      const outcome = await execute(claim, { crmdb: { ...target, write: { url: relay.url(db.writeUrl) } } }, () => new Date(expiresAt - TIMEOUT_MS - 300));
      expect(outcome).toMatchObject({
        status: "expired",
        reason: expect.stringMatching(
          /^the grant expired before action 0 could be written: update \/contacts\/\d+ on 'crmdb' was not sent: .* when the connection was ready, too little for the write to land before it; nothing was written$/,
        ),
      });
      expect(outcome.actions).toStrictEqual([
        { index: 0, target: "crmdb", path: `/contacts/${id}`, status: "skipped", detail: expect.stringContaining("was not sent") },
      ]);
    } finally {
      await relay.close();
    }
    expect(await db.writes()).toBe(writes);
    expect(await emailOf(id)).toBe("ada@old.example");
  });

  it("a target that cannot be reached at revalidation is transient: retried for half the (short) lease, then failed, nothing written", async () => {
    const claim = await claimFor(n, 3000);
    const writes = await db.writes();
    const outcome = await execute(claim, { crmdb: { ...target, read: { url: "postgres://nobody@127.0.0.1:1/nothing" } } });
    expect(outcome.status).toBe("failed");
    expect(outcome.reason).toMatch(/^could not re-read action 0: target 'crmdb': .*\(after [2-9] attempts\)$/);
    expect(await db.writes()).toBe(writes);
  });
});
