import { hkdfSync } from "node:crypto";
import { EncryptJWT, jwtDecrypt } from "jose";

/** What a browser carries between leaving for Slack and coming back: nothing a server must store. */
export interface OidcFlowState {
  state: string;
  nonce: string;
  codeVerifier: string;
  returnTo: string;
}

/** A sign-in left unfinished this long is started over. */
export const FLOW_TTL_SECONDS = 600;

/**
 * The key that seals flow state, derived from the client secret: every replica derives the same
 * one without a new setting or table, and a leaked flow cookie tells nothing about the secret.
 */
export function flowStateKey(clientSecret: string): Uint8Array {
  return new Uint8Array(hkdfSync("sha256", clientSecret, "countersign", "oidc-flow-state/v1", 32));
}

/** Encrypted, not just signed: the PKCE verifier must stay unreadable even to the browser holding it. */
export async function sealFlowState(key: Uint8Array, flow: OidcFlowState, now: Date): Promise<string> {
  const issuedAt = Math.floor(now.getTime() / 1000);
  return new EncryptJWT({ ...flow })
    .setProtectedHeader({ alg: "dir", enc: "A256GCM" })
    .setIssuedAt(issuedAt)
    .setExpirationTime(issuedAt + FLOW_TTL_SECONDS)
    .encrypt(key);
}

/** The flow state, or undefined when the cookie is missing, forged, tampered with or expired. */
export async function openFlowState(key: Uint8Array, sealed: string | undefined, now: Date): Promise<OidcFlowState | undefined> {
  if (!sealed) return undefined;
  try {
    const { payload } = await jwtDecrypt(sealed, key, { currentDate: now, keyManagementAlgorithms: ["dir"], contentEncryptionAlgorithms: ["A256GCM"] });
    const { state, nonce, codeVerifier, returnTo } = payload;
    if (typeof state !== "string" || typeof nonce !== "string" || typeof codeVerifier !== "string" || typeof returnTo !== "string") return undefined;
    return { state, nonce, codeVerifier, returnTo };
  } catch {
    return undefined;
  }
}

const FALLBACK_PATH = "/plans";

/**
 * Where to land after signing in: a path on this server only. Anything that could leave the
 * origin ("//evil", "/\evil", "https://…", control characters) falls back to the plans list.
 */
export function safeReturnPath(raw: string | undefined): string {
  if (!raw || !raw.startsWith("/") || raw.startsWith("//") || raw.startsWith("/\\") || /[\u0000-\u001f\u007f\\]/.test(raw)) return FALLBACK_PATH;
  const base = "http://countersign.invalid";
  try {
    const url = new URL(raw, base);
    if (url.origin !== base || url.pathname.startsWith("/auth/slack")) return FALLBACK_PATH;
    return url.pathname + url.search + url.hash;
  } catch {
    return FALLBACK_PATH;
  }
}
