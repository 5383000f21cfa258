import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../../src/config/load.ts";
import { loadSealKey, samePublicKey, signatureHolds, signSeal, statementOf, statementText } from "../../../src/service/audit/seal-signature.ts";
import { signatureDue } from "../../../src/service/audit/sign-seals.ts";

const root = mkdtempSync(path.join(os.tmpdir(), "countersign-seal-config-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const ed = () => generateKeyPairSync("ed25519");
const pemOf = (k: ReturnType<typeof ed>) => k.privateKey.export({ format: "pem", type: "pkcs8" }).toString();

function load(yaml: string, env: Record<string, string>) {
  const cwd = mkdtempSync(path.join(root, "c-"));
  writeFileSync(path.join(cwd, "countersign.yml"), yaml);
  return loadConfig({ env, role: "server", cwd });
}
function problemsOf(fn: () => unknown) {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error("no ConfigError");
}

describe("audit.seal and COUNTERSIGN_AUDIT_SEAL_KEY", () => {
  it("reads the policy with its defaults, and the key", () => {
    const key = pemOf(ed());
    const config = load("audit: { seal: { file: seals.jsonl } }\n", { COUNTERSIGN_AUDIT_SEAL_KEY: key });
    expect(config.audit?.seal).toEqual({ everyEvents: 1000, everySeconds: 60, file: "seals.jsonl" });
    expect(config.auditSealKey).toBe(key);
  });

  it("refuses publishing without a key, the grant key as the seal key, and bad values, naming each", () => {
    expect(problemsOf(() => load("slack: { auditChannel: C0AUDIT }\n", {}))).toEqual([
      { key: "COUNTERSIGN_AUDIT_SEAL_KEY", message: expect.stringMatching(/is not set, but slack\.auditChannel asks/) },
    ]);
    const key = pemOf(ed());
    expect(problemsOf(() => load("{}\n", { COUNTERSIGN_AUDIT_SEAL_KEY: key, COUNTERSIGN_GRANT_PRIVATE_KEY: key }))).toEqual([
      { key: "COUNTERSIGN_AUDIT_SEAL_KEY", message: expect.stringMatching(/is the grant signing key; audit seals need a dedicated key/) },
    ]);
    expect(
      problemsOf(() => load("audit: { seal: { everyEvents: 0, webhookUrl: ftp://x } }\n", { COUNTERSIGN_AUDIT_SEAL_KEY: key }))
        .map((p) => p.key)
        .sort(),
    ).toEqual(["audit.seal.everyEvents", "audit.seal.webhookUrl"]);
    expect(problemsOf(() => load("{}\n", { COUNTERSIGN_AUDIT_SEAL_KEY: "not a key" }))).toEqual([
      { key: "COUNTERSIGN_AUDIT_SEAL_KEY", message: expect.stringContaining("Ed25519 private key") },
    ]);
  });
});

describe("seal signatures", () => {
  const seal = { seq: 7, hash: "sha256:" + "ab".repeat(32), xidTo: "812", sealedAt: new Date("2026-12-02T12:00:00.123Z"), eventsTotal: 42 };

  it("sign the RFC 8785 statement of (seq, hash, xidTo, sealedAt, eventsTotal); any change breaks it; another key does not verify", async () => {
    const pair = ed();
    const key = await loadSealKey(pemOf(pair));
    expect(statementText(statementOf(seal))).toBe(
      `{"eventsTotal":42,"hash":"${seal.hash}","sealedAt":"2026-12-02T12:00:00.123Z","seq":7,"type":"countersign.audit_seal","xidTo":"812"}`,
    );
    const published = signSeal(key, statementOf(seal));
    expect(signatureHolds(published, [key.publicKey])).toBe(true);
    for (const change of [{ seq: 8 }, { eventsTotal: 41 }, { xidTo: "813" }, { hash: "sha256:" + "cd".repeat(32) }, { sealedAt: "2026-12-02T12:00:01.123Z" }]) {
      expect(signatureHolds({ ...published, ...change }, [key.publicKey])).toBe(false);
    }
    expect(signatureHolds(published, [ed().publicKey])).toBe(false);
  });

  it("keys load from PEM or JWK alike; only Ed25519; samePublicKey tells the grant key apart", async () => {
    const pair = ed();
    const fromPem = await loadSealKey(pemOf(pair));
    const fromJwk = await loadSealKey(JSON.stringify(pair.privateKey.export({ format: "jwk" })));
    expect(fromJwk.kid).toBe(fromPem.kid);
    expect(samePublicKey(fromJwk.privateKey, pair.publicKey)).toBe(true);
    expect(samePublicKey(fromJwk.privateKey, ed().privateKey)).toBe(false);
    const rsa = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ format: "pem", type: "pkcs8" }).toString();
    await expect(loadSealKey(rsa)).rejects.toThrow(/must be an Ed25519 key, not ec/);
  });

  it("are due first at once, then after everyEvents more events or everySeconds", () => {
    const policy = { everyEvents: 10, everySeconds: 60 };
    const at = new Date("2026-12-02T12:00:00Z");
    const last = { seq: 3, eventsTotal: 100, signedAt: at };
    expect(signatureDue({ seq: 1, eventsTotal: 5 }, undefined, policy, at)).toBe(true);
    expect(signatureDue({ seq: 3, eventsTotal: 100 }, last, policy, new Date(at.getTime() + 3600_000))).toBe(false);
    expect(signatureDue({ seq: 4, eventsTotal: 109 }, last, policy, new Date(at.getTime() + 59_000))).toBe(false);
    expect(signatureDue({ seq: 4, eventsTotal: 110 }, last, policy, at)).toBe(true);
    expect(signatureDue({ seq: 4, eventsTotal: 101 }, last, policy, new Date(at.getTime() + 60_000))).toBe(true);
  });
});
