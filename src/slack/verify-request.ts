import { createHmac } from "node:crypto";
import { sameSecret } from "../util/bearer.ts";

/** Slack's requests are refused when their timestamp is this far from now, in either direction. */
export const MAX_SKEW_SECONDS = 5 * 60;

export interface SigningHeaders {
  timestamp: string | undefined;
  signature: string | undefined;
}

export interface SignedRequest extends SigningHeaders {
  /** The body exactly as it arrived: the signature covers these bytes. */
  rawBody: string | Uint8Array;
}

/**
 * What can be checked before a byte of the body is read: both signing headers present, and a
 * timestamp within five minutes either way (stricter than Bolt, which accepts timestamps from
 * the future). Returns why the request is refused, or undefined when it may be read.
 */
export function whyNotFresh(headers: SigningHeaders, now: Date): string | undefined {
  const { timestamp, signature } = headers;
  if (!timestamp || !signature) return "missing X-Slack-Request-Timestamp or X-Slack-Signature";
  if (!/^\d{1,12}$/.test(timestamp)) return "malformed X-Slack-Request-Timestamp";
  const skew = Math.abs(now.getTime() / 1000 - Number(timestamp));
  if (skew > MAX_SKEW_SECONDS) return `timestamp is ${Math.round(skew)} s away from now (limit ${MAX_SKEW_SECONDS} s)`;
  return undefined;
}

/**
 * Slack's request signing (v0): HMAC-SHA256 over `v0:<timestamp>:<raw body>`, on top of
 * whyNotFresh: a captured request is good for at most five minutes either way. Returns why the
 * request is refused, or undefined when it is genuine.
 */
export function whyUnsigned(signingSecret: string, request: SignedRequest, now: Date): string | undefined {
  const stale = whyNotFresh(request, now);
  if (stale) return stale;
  if (!sameSecret(request.signature!, slackSignature(signingSecret, request.timestamp!, request.rawBody))) return "signature does not match";
  return undefined;
}

export function slackSignature(signingSecret: string, timestamp: string, rawBody: string | Uint8Array): string {
  return "v0=" + createHmac("sha256", signingSecret).update(`v0:${timestamp}:`).update(rawBody).digest("hex");
}
