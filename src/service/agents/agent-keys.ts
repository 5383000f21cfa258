import { createHash, randomBytes } from "node:crypto";

const KEY_PREFIX = "csk_";

/** A new agent API key: 256 random bits, shown once. */
export function newAgentKey(): string {
  return KEY_PREFIX + randomBytes(32).toString("base64url");
}

/** Keys are high-entropy, so a plain SHA-256 is enough to store them without storing them. */
export function hashAgentKey(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}
