import { createPrivateKey, createPublicKey, sign, verify, type KeyObject } from "node:crypto";
import canonicalize from "canonicalize";
import { calculateJwkThumbprint } from "jose";
import type { Seal } from "./seal-audit.ts";

/**
 * What a seal signature says, and nothing else: the seal's place (seq), its hash (which covers
 * every seal and event before it), where it stops (xidTo), when it was made and how many events
 * the log held then. `type` keeps a seal key's signature from being read as any other message.
 */
export interface SealStatement {
  type: "countersign.audit_seal";
  seq: number;
  hash: string;
  xidTo: string;
  sealedAt: string;
  eventsTotal: number;
}

/** One signed seal as published outside the database (a JSON line of the seals file, a webhook body). */
export interface PublishedSeal extends SealStatement {
  /** RFC 7638 thumbprint of the public key that verifies it. */
  kid: string;
  /** Ed25519 over the UTF-8 bytes of `statementText(statement)`, base64url. */
  signature: string;
}

export const statementOf = (seal: Pick<Seal, "seq" | "hash" | "xidTo" | "sealedAt" | "eventsTotal">): SealStatement => ({
  type: "countersign.audit_seal",
  seq: seal.seq,
  hash: seal.hash,
  xidTo: seal.xidTo,
  sealedAt: seal.sealedAt.toISOString(),
  eventsTotal: seal.eventsTotal,
});

/** The exact bytes signed: RFC 8785 JSON of the statement's fields, so any verifier can rebuild them. */
export function statementText(s: SealStatement): string {
  const { type, seq, hash, xidTo, sealedAt, eventsTotal } = s;
  return canonicalize({ type, seq, hash, xidTo, sealedAt, eventsTotal })!;
}

export interface SealKey {
  kid: string;
  privateKey: KeyObject;
  publicKey: KeyObject;
}

/** Reads COUNTERSIGN_AUDIT_SEAL_KEY: a PKCS#8 PEM or a private JWK, Ed25519 only. Throws naming what is wrong. */
export async function loadSealKey(text: string): Promise<SealKey> {
  let privateKey: KeyObject;
  try {
    const trimmed = text.trim();
    privateKey = trimmed.startsWith("{")
      ? createPrivateKey({ key: JSON.parse(trimmed) as import("node:crypto").JsonWebKey, format: "jwk" })
      : createPrivateKey(trimmed);
  } catch (err) {
    throw new Error(`COUNTERSIGN_AUDIT_SEAL_KEY could not be read as a private key (PKCS#8 PEM or JWK): ${(err as Error).message}`);
  }
  if (privateKey.asymmetricKeyType !== "ed25519") throw new Error(`COUNTERSIGN_AUDIT_SEAL_KEY must be an Ed25519 key, not ${privateKey.asymmetricKeyType}`);
  const publicKey = createPublicKey(privateKey);
  return { kid: await kidOf(publicKey), privateKey, publicKey };
}

/** The public key(s) a verifier trusts, from SPKI PEM text (several blocks during a rotation). */
export function loadSealPublicKeys(pemText: string): KeyObject[] {
  const blocks = pemText.match(/-----BEGIN PUBLIC KEY-----[\s\S]+?-----END PUBLIC KEY-----/g) ?? [];
  if (blocks.length === 0) throw new Error("no '-----BEGIN PUBLIC KEY-----' block found in the public key file");
  return blocks.map((pem) => {
    const key = createPublicKey(pem);
    if (key.asymmetricKeyType !== "ed25519") throw new Error(`the audit seal public key must be Ed25519, not ${key.asymmetricKeyType}`);
    return key;
  });
}

export async function kidOf(publicKey: KeyObject): Promise<string> {
  const { kty, crv, x } = publicKey.export({ format: "jwk" });
  return calculateJwkThumbprint({ kty: kty!, crv: crv!, x: x! });
}

/** Whether two keys (private or public) have the same public half: the grant key must never sign seals. */
export function samePublicKey(a: KeyObject, b: KeyObject): boolean {
  const pub = (k: KeyObject) => (k.type === "private" ? createPublicKey(k) : k).export({ format: "der", type: "spki" });
  return pub(a).equals(pub(b));
}

export function signSeal(key: SealKey, statement: SealStatement): PublishedSeal {
  const signature = sign(null, Buffer.from(statementText(statement), "utf8"), key.privateKey).toString("base64url");
  return { ...statement, kid: key.kid, signature };
}

/** Whether one of the keys signed this published seal. */
export function signatureHolds(published: PublishedSeal, keys: readonly KeyObject[]): boolean {
  const data = Buffer.from(statementText(published), "utf8");
  const signature = Buffer.from(published.signature, "base64url");
  return keys.some((key) => verify(null, data, key, signature));
}
