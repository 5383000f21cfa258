import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../src/store/db.ts";
import { runCli } from "../support/cli.ts";
import { openThrowawayPostgres } from "../support/databases.ts";

const testDatabaseUrl = process.env.TEST_DATABASE_URL;
/** A day within the 90 allowed: a week from now, in UTC (the CLI has no Slack to ask for a time zone). */
const inAWeek = () => new Date(Date.now() + 7 * 86_400_000).toISOString().slice(0, 10);

describe("countersign delegate", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "countersign-delegate-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("says what is missing or extra before it opens any database", async () => {
    const env = { COUNTERSIGN_DATA_DIR: path.join(dir, "never-created") };
    const missing = await runCli(["delegate", "--from", "U0ALICE", "--to", "U0BOB"], { cwd: dir, env });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/countersign delegate needs --until, e\.g\. --from U024BE7LH --to U0G9QF9C6 --until 2026-12-20/);
    const mixed = await runCli(["delegate", "list", "--from", "U0ALICE"], { cwd: dir, env });
    expect(mixed.code).toBe(1);
    expect(mixed.stderr).toMatch(/delegate list takes no --from, --to, --until or --target/);
    const noId = await runCli(["delegate", "end"], { cwd: dir, env });
    expect(noId.code).toBe(1);
    expect(noId.stderr).toMatch(/delegate end needs the delegation's id/);
    const other = await runCli(["delegate", "remove", "x"], { cwd: dir, env });
    expect(other.code).toBe(1);
    expect(other.stderr).toMatch(/'remove' is not one of list, end/);
  });

  describe.skipIf(!testDatabaseUrl)("on PostgreSQL", () => {
    let database: Database & { url: string };
    beforeAll(async () => {
      database = await openThrowawayPostgres(testDatabaseUrl!, { prefix: "cs_delegate_cli" });
      await database.migrate();
    });
    afterAll(async () => {
      await database?.close();
    });

    it("delegates for some targets, lists, ends early, and records who did it on the audit log", async () => {
      const env = { DATABASE_URL: database.url };
      const until = inAWeek();
      const made = await runCli(["delegate", "--from", "U0ALICE", "--to", "U0BOB", "--until", until, "--target", "crm", "--target", "billing", "--by", "ana"], {
        cwd: dir,
        env,
      });
      // No target is configured here: the CLI names the target it does not know.
      expect(made.code).toBe(1);
      expect(made.stderr).toMatch(/there is no target named "billing"/);

      const everywhere = await runCli(["delegate", "--from", "U0ALICE", "--to", "U0BOB", "--until", until, "--by", "ana"], { cwd: dir, env });
      expect(everywhere.code, everywhere.stderr).toBe(0);
      const next = new Date(Date.parse(`${until}T00:00:00Z`) + 86_400_000).toISOString();
      expect(everywhere.stdout).toContain(`Delegated: U0BOB decides for U0ALICE on every target until ${next} (the end of ${until}, UTC).`);
      const id = everywhere.stdout.trimEnd().split("\n").at(-1)!;
      expect(id).toMatch(/^[0-9a-f-]{36}$/);

      const self = await runCli(["delegate", "--from", "U0ALICE", "--to", "U0ALICE", "--until", until], { cwd: dir, env });
      expect(self.code).toBe(1);
      expect(self.stderr).toMatch(/nothing was delegated: you cannot delegate to yourself/);
      const past = await runCli(["delegate", "--from", "U0ALICE", "--to", "U0CAROL", "--until", "2020-01-01"], { cwd: dir, env });
      expect(past.code).toBe(1);
      expect(past.stderr).toMatch(/2020-01-01 has passed/);

      const listed = await runCli(["delegate", "list"], { cwd: dir, env });
      expect(listed.code, listed.stderr).toBe(0);
      expect(listed.stdout).toMatch(new RegExp(`^${id}\\tU0ALICE → U0BOB\\tuntil ${next}\\tevery target\\tin force\\tby cli:ana$`, "m"));

      const ended = await runCli(["delegate", "end", id, "--by", "ana"], { cwd: dir, env });
      expect(ended.code, ended.stderr).toBe(0);
      expect(ended.stdout).toContain(`Ended delegation ${id}: U0BOB no longer decides for U0ALICE.`);
      const again = await runCli(["delegate", "end", id], { cwd: dir, env });
      expect(again.code).toBe(1);
      expect(again.stderr).toMatch(/this delegation was ended at/);
      expect((await runCli(["delegate", "list"], { cwd: dir, env })).stdout).toMatch(/No delegation is in force/);
      expect((await runCli(["delegate", "list", "--all"], { cwd: dir, env })).stdout).toMatch(new RegExp(`^${id}\\t.*\\tended \\S+ by cli:ana\\t`, "m"));

      const events = await database.rows<{ type: string; by: string }>(
        sql`SELECT type, data::json->>'by' AS by FROM audit_events WHERE type LIKE 'delegation.%' ORDER BY id`,
      );
      expect(events).toEqual([
        { type: "delegation.created", by: "cli:ana" },
        { type: "delegation.ended", by: "cli:ana" },
      ]);
    });
  });
});
