import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { ConfigError, GRANT_KEY_REQUIRED, type Config } from "../config/load.ts";
import { generateGrantKeys, loadSigningKey, type SigningKey } from "../grant/keys.ts";

export const GRANT_KEY_FILES = { private: "grant-private.pem", public: "grant-public.pem" } as const;

/**
 * The key the server signs grants with. From COUNTERSIGN_GRANT_PRIVATE_KEY when set; on the
 * embedded database, one made on first start and kept in the data dir (with its public half
 * beside it, for the executor that `countersign start` launches). With PostgreSQL the key must
 * be given: replicas sharing a database must share a key.
 */
export async function resolveGrantKey(config: Pick<Config, "grantPrivateKeyPem" | "database">): Promise<{ key: SigningKey; publicPemFile?: string }> {
  if (config.grantPrivateKeyPem) return { key: await loadPem(config.grantPrivateKeyPem, "COUNTERSIGN_GRANT_PRIVATE_KEY") };
  if (config.database.kind !== "pglite") {
    throw new ConfigError("environment", [GRANT_KEY_REQUIRED]); // loadConfig refuses this already; configs built in code meet it here
  }
  const dir = config.database.dataDir;
  const privateFile = path.join(dir, GRANT_KEY_FILES.private);
  const publicFile = path.join(dir, GRANT_KEY_FILES.public);
  if (!existsSync(privateFile)) {
    mkdirSync(dir, { recursive: true });
    const pair = await generateGrantKeys();
    writeFileSync(privateFile, pair.privatePem, { mode: 0o600 });
    writeFileSync(publicFile, pair.publicPem, { mode: 0o644 });
  }
  return { key: await loadPem(readFileSync(privateFile, "utf8"), privateFile), publicPemFile: publicFile };
}

async function loadPem(pem: string, source: string): Promise<SigningKey> {
  try {
    return await loadSigningKey(pem);
  } catch (err) {
    throw new ConfigError("environment", [
      { key: source, message: `is not an Ed25519 PKCS#8 private key (${(err as Error).message}); 'countersign keys generate' prints one` },
    ]);
  }
}
