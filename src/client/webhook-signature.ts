import { createHmac, timingSafeEqual } from "node:crypto";

/** What a plan's callback URL receives on every status change. */
export interface WebhookPayload {
  planId: string;
  hash: string;
  status: string;
  approvals: { userId: string; via: "slack" | "web"; at: string }[];
  reason?: string;
  outcome?: unknown;
}

/** `Countersign-Signature: t=<unix>,v1=<hex hmac-sha256(secret, "<t>.<body>")>` */
export function signWebhook(secret: string, body: string, timestamp: number): string {
  return `t=${timestamp},v1=${createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex")}`;
}

/**
 * Whether a webhook really comes from Countersign: the HMAC over the exact body bytes matches,
 * and its timestamp is within `toleranceSec` of now (so a captured delivery cannot be replayed
 * later). Pass the raw body, before any JSON parsing.
 */
export function verifyWebhook(secret: string, header: string | null | undefined, body: string, options: { toleranceSec?: number; now?: Date } = {}): boolean {
  if (!header) return false;
  const parts = Object.fromEntries(header.split(",").map((p) => p.trim().split("=", 2) as [string, string]));
  const t = Number(parts.t);
  if (!/^\d+$/.test(parts.t ?? "") || !parts.v1) return false;
  const now = (options.now ?? new Date()).getTime() / 1000;
  if (Math.abs(now - t) > (options.toleranceSec ?? 300)) return false;
  const expected = Buffer.from(signWebhook(secret, body, t).split("v1=")[1]!);
  const got = Buffer.from(parts.v1);
  return got.length === expected.length && timingSafeEqual(got, expected);
}
