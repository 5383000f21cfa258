import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from "node:crypto";
import { calculateJwkThumbprint } from "jose";

export const GRANT_ALG = "EdDSA";

/**
 * Grant keys are node:crypto KeyObjects: jose signs and verifies with them on Node, and the server
 * compares the grant key with the audit seal key (`samePublicKey`) as KeyObjects too.
 */
export interface SigningKey {
  kid: string;
  /** Ed25519 private key. */
  key: KeyObject;
}

export interface VerifyingKeys {
  /** By kid, so that a rotated-out key can still verify the grants it signed. Ed25519 public keys. */
  byKid: Map<string, KeyObject>;
}

/** `kid` is the RFC 7638 thumbprint of the public key: the same key always has the same id. */
async function kidOf(publicKey: KeyObject): Promise<string> {
  const { kty, crv, x } = publicKey.export({ format: "jwk" });
  return calculateJwkThumbprint({ kty: kty!, crv: crv!, x: x! });
}

/**
 * What a person compares: "sha256:" and the hex SHA-256 of the public key's SPKI DER, as
 * `openssl pkey -pubin -in key.pem -outform DER | sha256sum` prints it. Takes either half of a pair.
 */
export function publicKeyFingerprint(key: KeyObject): string {
  const der = createPublicKey(key).export({ type: "spki", format: "der" });
  return `sha256:${createHash("sha256").update(der).digest("hex")}`;
}

function ed25519(key: KeyObject, what: string): KeyObject {
  if (key.asymmetricKeyType !== "ed25519") throw new Error(`${what} is ${key.asymmetricKeyType ?? key.type}, not Ed25519`);
  return key;
}

export async function generateGrantKeys(): Promise<{ privatePem: string; publicPem: string; kid: string }> {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  return {
    privatePem: privateKey.export({ type: "pkcs8", format: "pem" }) as string,
    publicPem: publicKey.export({ type: "spki", format: "pem" }) as string,
    kid: await kidOf(publicKey),
  };
}

/** The server's signing key from a PKCS#8 PEM (COUNTERSIGN_GRANT_PRIVATE_KEY). */
export async function loadSigningKey(privatePem: string): Promise<SigningKey> {
  const pem = privatePem.trim();
  if (!pem.startsWith("-----BEGIN PRIVATE KEY-----")) throw new Error("not a PKCS#8 PEM ('-----BEGIN PRIVATE KEY-----')");
  const key = ed25519(createPrivateKey({ key: pem, format: "pem" }), "the private key");
  return { kid: await kidOf(createPublicKey(key)), key };
}

/**
 * The executor's verifying keys from one or more SPKI PEM blocks (COUNTERSIGN_GRANT_PUBLIC_KEY):
 * during a rotation both the old and the new public key are listed.
 */
export async function loadVerifyingKeys(publicPems: string): Promise<VerifyingKeys> {
  const blocks = publicPems.match(/-----BEGIN PUBLIC KEY-----[\s\S]+?-----END PUBLIC KEY-----/g) ?? [];
  if (blocks.length === 0) throw new Error("no '-----BEGIN PUBLIC KEY-----' block found");
  const byKid = new Map<string, KeyObject>();
  for (const pem of blocks) {
    const key = ed25519(createPublicKey({ key: pem, format: "pem" }), "a public key");
    byKid.set(await kidOf(key), key);
  }
  return { byKid };
}
