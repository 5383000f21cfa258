import { createHmac } from "node:crypto";

/**
 * `Countersign-Signature: t=<unix>,v1=<hex hmac-sha256(secret, "<t>.<body>")>`; the client's
 * `verifyWebhook` (src/client/webhook-signature.ts) checks it.
 */
export function signWebhook(secret: string, body: string, timestamp: number): string {
  return `t=${timestamp},v1=${createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex")}`;
}
