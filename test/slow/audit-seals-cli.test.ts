import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/store/db.ts";
import { runCli, startCli } from "../support/cli.ts";
import { waitFor } from "../support/wait-for.ts";

const PEM = (kind: "PRIVATE" | "PUBLIC") => new RegExp(`-----BEGIN ${kind} KEY-----[\\s\\S]+?-----END ${kind} KEY-----`);

/**
 * Signed audit seals through the built command: `keys generate --audit-seal`, `serve` signing and appending
 * seals to its file, `audit verify --seals` passing on the true log and naming the published seal
 * a cut-back log contradicts, `audit export`, and the refusals (grant key as seal key, publishing
 * configured without a key).
 */
describe("audit seals from the command line", () => {
  let dir: string;
  let sealKey: string;
  let publicKeyFile: string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "countersign-seals-cli-"));
    const keys = await runCli(["keys", "generate", "--audit-seal"], { cwd: dir });
    expect(keys.code, keys.stderr).toBe(0);
    expect(keys.stdout).toMatch(/COUNTERSIGN_AUDIT_SEAL_KEY/);
    sealKey = PEM("PRIVATE").exec(keys.stdout)![0];
    publicKeyFile = path.join(dir, "seal-public.pem");
    writeFileSync(publicKeyFile, PEM("PUBLIC").exec(keys.stdout)![0] + "\n");
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("refuses the grant key as the seal key, and publishing without a key, naming COUNTERSIGN_AUDIT_SEAL_KEY", async () => {
    const cwd = mkdtempSync(path.join(dir, "refused-"));
    writeFileSync(path.join(cwd, "countersign.yml"), "audit: { seal: { file: seals.jsonl } }\n");
    const withoutKey = await runCli(["serve"], { cwd });
    expect(withoutKey.code).toBe(1);
    expect(withoutKey.stderr).toMatch(/COUNTERSIGN_AUDIT_SEAL_KEY: is not set, but audit\.seal asks for signed audit seals/);
    const sameKey = await runCli(["serve"], { cwd, env: { COUNTERSIGN_GRANT_PRIVATE_KEY: sealKey, COUNTERSIGN_AUDIT_SEAL_KEY: sealKey } });
    expect(sameKey.code).toBe(1);
    expect(sameKey.stderr).toMatch(/COUNTERSIGN_AUDIT_SEAL_KEY: is the grant signing key; audit seals need a dedicated key/);
    expect(sameKey.stderr).not.toMatch(/^\s+at /m);
  });

  it("serve signs seals into the file; verify --seals passes and export writes JSON Lines (through the running server and directly), and a cut-back log is named by the published seal it contradicts", async () => {
    const cwd = mkdtempSync(path.join(dir, "serve-"));
    const sealsFile = path.join(cwd, "seals.jsonl");
    writeFileSync(
      path.join(cwd, "countersign.yml"),
      `executor: { expected: false }\naudit: { seal: { everyEvents: 1, everySeconds: 1, file: ${JSON.stringify(sealsFile)} } }\n`,
    );
    const serve = await startCli(["serve"], {
      cwd,
      env: { COUNTERSIGN_AUDIT_SEAL_KEY: sealKey, PORT: "0", LOG_LEVEL: "info" },
      ready: /countersign serving/,
      timeoutMs: 90_000,
    });
    try {
      // Through the running server (it holds the embedded data dir): an audited event to seal.
      expect((await runCli(["agents", "add", "sealed-agent"], { cwd })).code).toBe(0);
      await waitFor(
        "a signed seal of the agent's event in the file",
        () => existsSync(sealsFile) && readFileSync(sealsFile, "utf8").includes('"countersign.audit_seal"'),
        90_000,
      );
      // While the server holds the embedded data dir, both go through its admin channel.
      const held = await runCli(["audit", "verify", "--seals", sealsFile, "--public-key", publicKeyFile], { cwd });
      expect(held.code, held.stdout + held.stderr).toBe(0);
      expect(held.stdout).toMatch(/^Published seals: \d+ checked; the newest, seal \d+ .* is signed and matches/m);
      const streamed = await runCli(["audit", "export", "--since", "2000-01-01T00:00:00Z"], { cwd });
      expect(streamed.code, streamed.stderr).toBe(0);
      expect(
        streamed.stdout
          .trim()
          .split("\n")
          .map((l) => (JSON.parse(l) as { type: string }).type),
      ).toContain("agent.added");
    } finally {
      expect(await serve.stop()).toBe(0);
    }

    const ok = await runCli(["audit", "verify", "--seals", sealsFile, "--public-key", publicKeyFile], { cwd });
    expect(ok.code, ok.stdout + ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/^Published seals: \d+ checked; the newest, seal \d+ .* is signed and matches/m);
    expect(ok.stdout).toMatch(/^Audit log intact/m);

    const exported = path.join(cwd, "trail.jsonl");
    const exp = await runCli(["audit", "export", "--since", "2000-01-01T00:00:00Z", "--out", exported], { cwd });
    expect(exp.code, exp.stderr).toBe(0);
    const events = readFileSync(exported, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { type: string; hash: string });
    expect(events.map((e) => e.type)).toContain("agent.added");
    expect(events.every((e) => /^sha256:[0-9a-f]{64}$/.test(e.hash))).toBe(true);
    const bad = await runCli(["audit", "export", "--since", "yesterday"], { cwd });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--since must be an ISO 8601 time .*got 'yesterday'/);

    // The attacker: delete every event and every seal.
    const database = await openDatabase({ kind: "pglite", dataDir: path.join(cwd, ".countersign") });
    try {
      await database.db.transaction(async (tx) => {
        await tx.execute(sql`ALTER TABLE audit_events DISABLE TRIGGER audit_events_append_only`);
        await tx.execute(sql`ALTER TABLE audit_seals DISABLE TRIGGER audit_seals_append_only`);
        await tx.execute(sql`DELETE FROM audit_events`);
        await tx.execute(sql`DELETE FROM audit_seals`);
        await tx.execute(sql`ALTER TABLE audit_seals ENABLE TRIGGER audit_seals_append_only`);
        await tx.execute(sql`ALTER TABLE audit_events ENABLE TRIGGER audit_events_append_only`);
      });
    } finally {
      await database.close();
    }
    expect((await runCli(["audit", "verify"], { cwd })).code).toBe(0); // what plain verify cannot see
    const caught = await runCli(["audit", "verify", "--seals", sealsFile, "--public-key", publicKeyFile], { cwd });
    expect(caught.code).toBe(1);
    const first = JSON.parse(readFileSync(sealsFile, "utf8").split("\n")[0]!) as { seq: number };
    expect(caught.stdout).toMatch(
      new RegExp(`^Audit log CONTRADICTS published seal ${first.seq} \\(missing\\): .*the log was cut back after it was published`, "m"),
    );
  }, 240_000);
});
