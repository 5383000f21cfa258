/**
 * Checks the `Countersign-Signature` of a webhook with Web Crypto, which Node 20, Bun, Deno and
 * browsers all have, so the client needs no `node:crypto`. The server signs with the same scheme
 * (src/webhooks/sign-webhook.ts).
 */

/**
 * Whether a webhook really comes from Countersign: the HMAC-SHA256 over `"<t>.<body>"` (the
 * exact body bytes) matches `v1`, and its timestamp `t` is within `toleranceSec` of now (so a
 * captured delivery cannot be replayed later). Pass the raw body, before any JSON parsing.
 * Header: `Countersign-Signature: t=<unix seconds>,v1=<hex>`.
 */
export async function verifyWebhook(
  secret: string,
  header: string | null | undefined,
  body: string,
  options: { toleranceSec?: number; now?: Date } = {},
): Promise<boolean> {
  if (!header) return false;
  const parts = new Map(
    header.split(",").map((p) => {
      const at = p.indexOf("=");
      return [p.slice(0, at).trim(), p.slice(at + 1).trim()] as const;
    }),
  );
  const t = parts.get("t") ?? "";
  const signature = hexBytes(parts.get("v1") ?? "");
  if (!/^\d+$/.test(t) || !signature || signature.length !== 32) return false;
  const now = (options.now ?? new Date()).getTime() / 1000;
  if (Math.abs(now - Number(t)) > (options.toleranceSec ?? 300)) return false;
  const encoder = new TextEncoder();
  const key = await crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
  // verify() compares in constant time, so the answer's timing says nothing about the expected MAC.
  return crypto.subtle.verify("HMAC", key, signature, encoder.encode(`${t}.${body}`));
}

function hexBytes(hex: string): Uint8Array<ArrayBuffer> | undefined {
  if (hex.length % 2 !== 0 || !/^[0-9a-f]*$/i.test(hex)) return undefined;
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return bytes;
}
