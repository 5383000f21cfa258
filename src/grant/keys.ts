import { calculateJwkThumbprint, exportJWK, exportPKCS8, exportSPKI, generateKeyPair, importPKCS8, importSPKI, type CryptoKey } from "jose";

export const GRANT_ALG = "EdDSA";

export interface SigningKey {
  kid: string;
  key: CryptoKey;
}

export interface VerifyingKeys {
  /** By kid, so that a rotated-out key can still verify the grants it signed. */
  byKid: Map<string, CryptoKey>;
}

/** `kid` is the RFC 7638 thumbprint of the public key: the same key always has the same id. */
async function kidOf(publicKey: CryptoKey): Promise<string> {
  return calculateJwkThumbprint(await exportJWK(publicKey));
}

export async function generateGrantKeys(): Promise<{ privatePem: string; publicPem: string; kid: string }> {
  const { privateKey, publicKey } = await generateKeyPair(GRANT_ALG, { crv: "Ed25519", extractable: true });
  return { privatePem: await exportPKCS8(privateKey), publicPem: await exportSPKI(publicKey), kid: await kidOf(publicKey) };
}

/** The server's signing key from a PKCS#8 PEM (COUNTERSIGN_GRANT_PRIVATE_KEY). */
export async function loadSigningKey(privatePem: string): Promise<SigningKey> {
  const key = await importPKCS8(privatePem.trim(), GRANT_ALG, { extractable: true });
  const jwk = await exportJWK(key);
  // The public half of an OKP key is its `x`; drop `d` to get the public JWK the kid is made of.
  const publicJwk = { kty: jwk.kty!, crv: jwk.crv!, x: jwk.x! };
  return { kid: await calculateJwkThumbprint(publicJwk), key };
}

/**
 * The executor's verifying keys from one or more SPKI PEM blocks (COUNTERSIGN_GRANT_PUBLIC_KEY):
 * during a rotation both the old and the new public key are listed.
 */
export async function loadVerifyingKeys(publicPems: string): Promise<VerifyingKeys> {
  const blocks = publicPems.match(/-----BEGIN PUBLIC KEY-----[\s\S]+?-----END PUBLIC KEY-----/g) ?? [];
  if (blocks.length === 0) throw new Error("no '-----BEGIN PUBLIC KEY-----' block found");
  const byKid = new Map<string, CryptoKey>();
  for (const pem of blocks) {
    const key = await importSPKI(pem, GRANT_ALG, { extractable: true });
    byKid.set(await kidOf(key), key);
  }
  return { byKid };
}
