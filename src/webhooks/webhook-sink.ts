import type { PlanStatus, WebhookPayload } from "../contract/agent-api.ts";
import { whyCallbackRefused } from "../policy/callback-url.ts";
import { signWebhook } from "./sign-webhook.ts";
import type { ServiceContext } from "../service/context.ts";
import { DeliveryError, type OutboxHandler } from "../service/delivery/index.ts";
import { webhookOfPlan } from "../service/delivery/index.ts";

const TIMEOUT_MS = 10_000;

/**
 * The "webhook" outbox sink: a signed POST to the plan's callback URL for each status change,
 * in order per plan, retried by the outbox until it succeeds or is dead-lettered. The allowlist
 * is read again here, from the config the server runs now: a URL it no longer allows is dead at
 * once, not retried (an admin may retry it from /lanes once the host is listed again).
 */
export function webhookSink(ctx: ServiceContext, fetchImpl: typeof fetch = fetch): OutboxHandler {
  return async (event) => {
    if (!event.type.startsWith("plan.") || event.type === "plan.reminder") return; // votes and reminders are not status changes
    const hook = await webhookOfPlan(ctx, event.planId);
    if (!hook) return;
    const { callbackUrl, secret, view } = hook;
    const refused = whyCallbackRefused(callbackUrl, ctx.config.webhooks.allowedHosts);
    if (refused) throw new DeliveryError(`webhook not sent: ${refused}`, { permanent: true });
    if (!secret) throw new DeliveryError(`agent of plan ${view.id} has no webhook secret; recreate it with 'countersign agents add'`, { permanent: true });
    const reason = event.status === "rejected" ? view.rejection?.reason : typeof event.data?.reason === "string" ? event.data.reason : undefined;
    const payload: WebhookPayload = {
      planId: view.id,
      hash: view.hash,
      status: event.status as PlanStatus, // the outbox stores the status a transition moved the plan to
      approvals: view.approvals,
      ...(reason !== undefined ? { reason } : {}),
      ...(view.outcome && ["applied", "stale", "failed", "expired"].includes(event.status) ? { outcome: view.outcome } : {}),
      // Replaced: by which version, and by whose edit when a reviewer's made it.
      ...(event.status === "superseded" && view.supersededBy ? { supersededBy: view.supersededBy } : {}),
    };
    const body = JSON.stringify(payload);
    let response: Response;
    try {
      response = await fetchImpl(callbackUrl, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "countersign-signature": signWebhook(secret, body, Math.floor(Date.now() / 1000)),
          "user-agent": "Countersign-Webhooks",
        },
        body,
        redirect: "manual", // a redirect could lead anywhere; the allowlist was checked for this URL only
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
    } catch (err) {
      throw new DeliveryError(`webhook to ${new URL(callbackUrl).host} failed: ${(err as Error).message}`);
    }
    await response.body?.cancel();
    if (!response.ok) throw new DeliveryError(`webhook to ${new URL(callbackUrl).host} answered HTTP ${response.status}`);
  };
}
