import { generateGrantKeys } from "../grant/keys.ts";

/** `countersign keys generate`: a new Ed25519 pair for signing and verifying grants. */
export async function keysGenerate(out: (line: string) => void): Promise<void> {
  const { privatePem, publicPem, kid } = await generateGrantKeys();
  out(`# kid ${kid}`);
  out("# COUNTERSIGN_GRANT_PRIVATE_KEY — the server's (every replica's); keep it secret");
  out(privatePem.trimEnd());
  out("# COUNTERSIGN_GRANT_PUBLIC_KEY — every executor's; during a rotation list the old and the new one");
  out(publicPem.trimEnd());
}

/** `countersign keys generate --audit-seal`: a dedicated Ed25519 pair for signing audit seals (never the grant key). */
export async function auditSealKeysGenerate(out: (line: string) => void): Promise<void> {
  const { privatePem, publicPem, kid } = await generateGrantKeys(); // the same kind of key; a separate pair
  out(`# kid ${kid}`);
  out("# COUNTERSIGN_AUDIT_SEAL_KEY — the server's (every replica's); keep it secret, and apart from the grant key");
  out(privatePem.trimEnd());
  out("# the public key for 'countersign audit verify --seals FILE --public-key FILE'; keep it with whoever checks the published seals");
  out(publicPem.trimEnd());
}
