import { createHash, createHmac, pbkdf2Sync, randomBytes } from "node:crypto";

/** PostgreSQL's own iteration count (scram_iterations' default), which every client supports. */
export const SCRAM_ITERATIONS = 4096;

/**
 * A SCRAM-SHA-256 verifier in the form PostgreSQL keeps in pg_authid.rolpassword (RFC 5802,
 * RFC 7677): `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`, base64. CREATE/ALTER ROLE
 * given this stores it as is, so the statement — which can reach the server log or
 * pg_stat_statements — carries no password. PostgreSQL runs a password through SASLprep before
 * hashing it; printable ASCII passes unchanged, so only that is accepted here (the demo's are hex).
 */
export function scramSha256Verifier(password: string, salt: Buffer = randomBytes(16), iterations = SCRAM_ITERATIONS): string {
  if (!/^[\x21-\x7e]+$/.test(password))
    throw new Error("a SCRAM verifier is made here only for a non-empty printable-ASCII password (PostgreSQL would SASLprep anything else first)");
  const keys = scramKeys(password, salt, iterations);
  return `SCRAM-SHA-256$${iterations}:${salt.toString("base64")}$${keys.storedKey.toString("base64")}:${keys.serverKey.toString("base64")}`;
}

/** SaltedPassword, ClientKey, StoredKey and ServerKey of RFC 5802 §3, with SHA-256. */
export function scramKeys(password: string, salt: Buffer, iterations: number): { clientKey: Buffer; storedKey: Buffer; serverKey: Buffer } {
  const salted = pbkdf2Sync(password, salt, iterations, 32, "sha256");
  const clientKey = hmac(salted, "Client Key");
  return { clientKey, storedKey: createHash("sha256").update(clientKey).digest(), serverKey: hmac(salted, "Server Key") };
}

function hmac(key: Buffer, text: string): Buffer {
  return createHmac("sha256", key).update(text).digest();
}
