import type { KeyObject } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { generateGrantKeys } from "../../src/grant/keys.ts";
import { loadSealKey, type SealKey } from "../../src/service/audit/seal-signature.ts";
import type { SealSigning } from "../../src/service/audit/sign-seals.ts";
import type { Database } from "../../src/store/db.ts";
import type { TestDatabaseKind } from "./databases.ts";
import { openHarness, type Harness } from "./harness.ts";

let keyPair: Promise<{ key: SealKey; publicPem: string }> | undefined;
/** One Ed25519 seal key for the whole run (generating one per test adds nothing). */
export const sealKeyPair = () => (keyPair ??= generateGrantKeys().then(async (k) => ({ key: await loadSealKey(k.privatePem), publicPem: k.publicPem })));

export interface SignedSeals {
  database: Database;
  h: Harness;
  /** Signing into `file` (a fresh directory), as the server's sealer would. */
  signing: SealSigning;
  file: string;
  publicKeys: KeyObject[];
  /** Closes the harness and the database, and removes the file's directory. */
  close(): Promise<void>;
}

/**
 * A fresh database of `kind` with a harness, the run's seal key and a seals file of its own: what
 * a test of signed seals starts from, one per test, since those tests tamper with the log.
 */
export async function openSignedSeals(kind: TestDatabaseKind, policy: Pick<SealSigning["policy"], "everyEvents" | "everySeconds">): Promise<SignedSeals> {
  const database = await kind.open();
  const h = await openHarness(database);
  const pair = await sealKeyPair();
  const dir = mkdtempSync(path.join(tmpdir(), `countersign-seals-${kind.name}-`));
  const file = path.join(dir, "published", "seals.jsonl"); // a directory the file sink must make
  return {
    database,
    h,
    file,
    signing: { key: pair.key, policy: { ...policy, file } },
    publicKeys: [pair.key.publicKey],
    async close() {
      await h.close();
      await database.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
