import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MIGRATIONS_FOLDER } from "../../src/store/db.ts";
import { postgresKind } from "../support/databases.ts";
import { chromiumAvailable, launchChromium } from "../support/chromium.ts";
import { runCli, startCli } from "../support/cli.ts";

/**
 * The bound for a test that boots the embedded database in several processes one after another:
 * about 30 s on a quiet machine, several times that at load average 8 on two cores.
 */
const SLOW_PROCESSES_MS = 300_000;

const lastLine = (text: string) => text.trimEnd().split("\n").at(-1)!;

describe("countersign CLI", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "countersign-cli-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it(
    "adds, lists and revokes agents on the embedded database; the key is the last line",
    async () => {
      const cwd = mkdtempSync(path.join(dir, "agents-"));
      const added = await runCli(["agents", "add", "billing-bot"], { cwd });
      expect(added.code, added.stderr).toBe(0);
      expect(lastLine(added.stdout)).toMatch(/^csk_[A-Za-z0-9_-]{43}$/);
      const listed = await runCli(["agents", "list"], { cwd });
      expect(listed.stdout).toMatch(/^billing-bot\tactive/m);
      const dup = await runCli(["agents", "add", "billing-bot"], { cwd });
      expect(dup.code).toBe(1);
      expect(dup.stderr).toContain("already exists");
      expect((await runCli(["agents", "revoke", "billing-bot"], { cwd })).code).toBe(0);
      expect((await runCli(["agents", "list"], { cwd })).stdout).toMatch(/^billing-bot\trevoked/m);
      const bad = await runCli(["agents", "add", "Bad Name!"], { cwd });
      expect(bad.code).toBe(1);
      expect(bad.stderr).toContain("agent name");
    },
    SLOW_PROCESSES_MS,
  ); // six CLI processes, each booting the embedded database

  it("policy check prints each target's effective policy, and names bad keys", async () => {
    const cwd = mkdtempSync(path.join(dir, "policy-"));
    writeFileSync(
      path.join(cwd, "ok.yml"),
      [
        "defaults: { approvers: [U0ALICE, U0BOB], requiredApprovals: 1 }",
        "targets:",
        "  crm:",
        "    adapter: http.json",
        "    baseUrl: http://127.0.0.1:4010",
        '    read: { headers: { Authorization: "Bearer ${UNSET_READ_TOKEN}" } }',
        '    allow: { ops: [merge], paths: ["/contacts/*"] }',
        "    policy: { requiredApprovals: 2 }",
        "  locked:",
        "    adapter: http.json",
        "    baseUrl: http://127.0.0.1:4011",
      ].join("\n"),
    );
    const ok = await runCli(["policy", "check", "ok.yml"], { cwd });
    expect(ok.code, ok.stderr).toBe(0); // credentials are not resolved, so none need to be set
    expect(ok.stdout).toContain("U0ALICE, U0BOB (defaults.approvers); 2 of 2 needed (targets.crm.policy.requiredApprovals)");
    expect(ok.stdout).toContain("may propose: ops merge on /contacts/*");
    expect(ok.stdout).toMatch(/target locked[\s\S]*may propose: NOTHING/);
    writeFileSync(path.join(cwd, "bad.yml"), "targets:\n  crm:\n    adapter: http.json\n    baseUrl: http://x\n    allow: { ops: [drop], paths: [x] }\n");
    const bad = await runCli(["policy", "check", "bad.yml"], { cwd });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("targets.crm.allow.ops.0");
    expect(bad.stderr).toContain("targets.crm.allow.paths.0");
  });

  it("reports a config error naming the key and how to fix it", async () => {
    const cwd = mkdtempSync(path.join(dir, "config-"));
    writeFileSync(path.join(cwd, "countersign.yml"), "targets:\n  crm:\n    adapter: http.json\n    baseUrl: http://127.0.0.1:4010\n    colour: blue\n");
    const result = await runCli(["agents", "list"], { cwd });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("targets.crm");
    expect(result.stderr).toContain("'colour'");
    const env = await runCli(["agents", "list"], { cwd, env: { PORT: "not-a-port" } });
    expect(env.code).toBe(1);
    expect(env.stderr).toContain("PORT");
  });

  it(
    "start: the printed curl line proposes, the printed login link signs the demo reviewer in, Approve in Chromium, the executor child applies; Ctrl-C stops it all",
    async () => {
      const cwd = mkdtempSync(path.join(dir, "start-"));
      const port = String(20_000 + Math.floor(Math.random() * 20_000));
      const app = await startCli(["start"], { cwd, env: { PORT: port }, ready: /Ctrl-C stops everything/, timeoutMs: SLOW_PROCESSES_MS });
      try {
        const output = app.output();
        const key = /Bearer (csk_[A-Za-z0-9_-]+)/.exec(output)?.[1];
        const body = /-d '(\{.*\})'$/m.exec(output)?.[1];
        expect(key).toBeDefined();
        expect(body).toBeDefined();
        const res = await fetch(`http://127.0.0.1:${port}/v1/plans`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: body!,
        });
        expect(res.status).toBe(201);
        const plan = (await res.json()) as { status: string; preview: { actions: { changes: { path: string }[] }[] } };
        expect(plan.status).toBe("pending");
        expect(plan.preview.actions[0]!.changes.map((c) => c.path)).toEqual(["/email"]);

        if (chromiumAvailable) {
          // What the README promises a newcomer: approve the demo plan in a browser, see it applied.
          const loginUrl = /^\s+(http:\/\/\S+\/login\/\S+)$/m.exec(output)![1]!;
          const browser = await launchChromium();
          try {
            const page = await browser.newPage();
            await page.goto(loginUrl);
            await page.getByRole("button", { name: "Sign in" }).click();
            await page.waitForURL(/\/plans$/);
            await page.goto(`http://localhost:${port}/plans/${(plan as unknown as { id: string }).id}`);
            await page.getByRole("button", { name: "Approve" }).click();
            await page.getByRole("status").filter({ hasText: "Your approval is recorded" }).waitFor();
          } finally {
            await browser.close();
          }
          const applied = await fetch(`http://127.0.0.1:${port}/v1/plans/${(plan as unknown as { id: string }).id}/wait?timeout=60`, {
            headers: { authorization: `Bearer ${key}` },
          });
          const done = (await applied.json()) as { status: string; outcome: { status: string } };
          expect(done.status).toBe("applied");
          expect(done.outcome.status).toBe("applied");
        }

        const link = await runCli(["login-link", "--user", "U0SOMEONE", "--name", "Some One"], { cwd });
        expect(link.code, link.stderr).toBe(0);
        expect(lastLine(link.stdout)).toMatch(/^http:\/\/localhost:\d+\/login\/[A-Za-z0-9_-]{43}$/);

        // The data dir is held by the server: the CLI goes through it, and a second server is refused.
        const added = await runCli(["agents", "add", "second-agent"], { cwd });
        expect(added.code, added.stderr).toBe(0);
        expect(lastLine(added.stdout)).toMatch(/^csk_/);
        // So does the kill switch (its /admin routes).
        const paused = await runCli(["pause", "--reason", "demo freeze", "--by", "tester"], { cwd });
        expect(paused.code, paused.stderr).toBe(0);
        expect((await runCli(["pause", "--status"], { cwd })).stdout).toMatch(/^Paused since \S+ by tester \(cli\): demo freeze$/m);
        const again = await runCli(["pause", "--reason", "twice"], { cwd });
        expect(again.code).toBe(1);
        expect(again.stderr).toMatch(/already paused .*by tester: demo freeze/);
        const resumed = await runCli(["resume"], { cwd });
        expect(resumed.code, resumed.stderr).toBe(0);
        expect(resumed.stdout).toMatch(/^Resumed by \S+ \(paused since \S+ by tester: demo freeze\)/);
        writeFileSync(path.join(cwd, "countersign.yml"), "# serve needs a config file\n");
        const second = await runCli(["serve"], {
          cwd,
          env: { PORT: String(Number(port) + 1), COUNTERSIGN_EXECUTOR_TOKEN: "an-executor-token-of-some-length" },
        });
        expect(second.code).toBe(1);
        expect(second.stderr).toMatch(/COUNTERSIGN_DATA_DIR: another Countersign \(pid \d+.*\) is using/);
        expect(second.stderr).not.toMatch(/^\s+at /m);
      } finally {
        expect(await app.stop()).toBe(0);
      }
      // Stopped cleanly: the dir is free again and the data persisted.
      const listed = await runCli(["agents", "list"], { cwd });
      expect(listed.stdout).toMatch(/^demo-agent\tactive/m);
      expect(listed.stdout).toMatch(/^second-agent\tactive/m);
      const audit = await runCli(["audit", "verify"], { cwd });
      expect(audit.code, audit.stdout + audit.stderr).toBe(0);
      expect(audit.stdout).toMatch(/Audit log intact: \d+ event/);
    },
    SLOW_PROCESSES_MS,
  );

  describe.skipIf(!postgresKind)("on PostgreSQL", () => {
    it("migrates from several processes at once without racing", async () => {
      const base = process.env.TEST_DATABASE_URL!;
      const admin = postgres(base, { onnotice: () => {}, max: 1 });
      const name = `cs_cli_${Date.now().toString(36)}`;
      await admin.unsafe(`CREATE DATABASE ${name}`);
      try {
        const url = new URL(base);
        url.pathname = `/${name}`;
        const runs = await Promise.all([1, 2, 3].map(() => runCli(["migrate"], { cwd: dir, env: { DATABASE_URL: url.toString() } })));
        for (const run of runs) expect(run.code, run.stderr).toBe(0);
        const db = postgres(url.toString(), { onnotice: () => {}, max: 1 });
        const [{ count }] = (await db`SELECT count(*)::int AS count FROM drizzle.__drizzle_migrations`) as unknown as [{ count: number }];
        await db.end();
        const journal = JSON.parse(readFileSync(path.join(MIGRATIONS_FOLDER, "meta", "_journal.json"), "utf8")) as { entries: unknown[] };
        expect(count).toBe(journal.entries.length);
      } finally {
        await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await admin.end();
      }
    });
  });
});
