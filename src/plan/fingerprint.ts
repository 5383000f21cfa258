import { createHash } from "node:crypto";
import canonicalize from "canonicalize";

export type Sha256 = `sha256:${string}`;

/** RFC 8785 (JCS) canonical form: the same JSON value always gives the same bytes. */
export function canonicalJson(value: unknown): string {
  const text = canonicalize(value);
  if (text === undefined) throw new TypeError("value cannot be canonicalized as JSON");
  return text;
}

/** `"sha256:" + hex(sha256(JCS(value)))` — the one fingerprint used for plans, states and requests. */
export function fingerprint(value: unknown): Sha256 {
  return `sha256:${createHash("sha256").update(canonicalJson(value)).digest("hex")}`;
}

export const SHA256_PATTERN = /^sha256:[0-9a-f]{64}$/;

/** The first 12 hex digits, for people to compare at a glance. */
export function shortHash(hash: string): string {
  return hash.replace(/^sha256:/, "").slice(0, 12);
}
