import { WebAPIHTTPError, WebAPIPlatformError, WebAPIRateLimitedError } from "@slack/web-api";
import { DeliveryError } from "../service/delivery/index.ts";

/** Slack answers that no retry will fix: delivery stops and the failure is kept for people to see. */
const PERMANENT = new Set([
  "channel_not_found",
  "not_in_channel",
  "is_archived",
  "invalid_blocks",
  "msg_too_long",
  "invalid_auth",
  "not_authed",
  "account_inactive",
  "token_revoked",
  "missing_scope",
  "no_permission",
  "restricted_action",
  "cant_update_message",
  "message_not_found",
  "invalid_arguments",
]);

/** Turns a Web API failure into how the outbox should retry it. */
export function deliveryErrorOf(err: unknown, what: string): DeliveryError {
  if (err instanceof WebAPIRateLimitedError) {
    return new DeliveryError(`${what}: Slack rate-limited us (Retry-After ${err.retryAfter} s)`, { retryAfterMs: err.retryAfter * 1000, cause: err });
  }
  if (err instanceof WebAPIPlatformError) {
    const code = err.data.error;
    return new DeliveryError(`${what}: Slack answered ${code}`, { permanent: PERMANENT.has(code), cause: err });
  }
  if (err instanceof WebAPIHTTPError) return new DeliveryError(`${what}: Slack answered HTTP ${err.statusCode}`, { cause: err });
  return new DeliveryError(`${what}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
}
