import { createHmac } from "node:crypto";
import { sameSecret } from "../server/bearer.ts";

/** Slack's requests are refused when their timestamp is this far from now, in either direction. */
export const MAX_SKEW_SECONDS = 5 * 60;

export interface SignedRequest {
  rawBody: string;
  timestamp: string | undefined;
  signature: string | undefined;
}

/**
 * Slack's request signing (v0): HMAC-SHA256 over `v0:<timestamp>:<raw body>`. Stricter than
 * Bolt, which accepts timestamps from the future: a captured request is good for at most five
 * minutes either way. Returns why the request is refused, or undefined when it is genuine.
 */
export function whyUnsigned(signingSecret: string, request: SignedRequest, now: Date): string | undefined {
  const { timestamp, signature, rawBody } = request;
  if (!timestamp || !signature) return "missing X-Slack-Request-Timestamp or X-Slack-Signature";
  if (!/^\d{1,12}$/.test(timestamp)) return "malformed X-Slack-Request-Timestamp";
  const skew = Math.abs(now.getTime() / 1000 - Number(timestamp));
  if (skew > MAX_SKEW_SECONDS) return `timestamp is ${Math.round(skew)} s away from now (limit ${MAX_SKEW_SECONDS} s)`;
  if (!sameSecret(signature, slackSignature(signingSecret, timestamp, rawBody))) return "signature does not match";
  return undefined;
}

export function slackSignature(signingSecret: string, timestamp: string, rawBody: string): string {
  return "v0=" + createHmac("sha256", signingSecret).update(`v0:${timestamp}:${rawBody}`).digest("hex");
}
