import type { Config } from "../config/load.ts";
import { AUDIT_KEY_IS_GRANT_KEY } from "../config/load.ts";
import { StartupError } from "../util/startup-errors.ts";
import type { SigningKey } from "../grant/keys.ts";
import type { ServiceContext } from "../service/context.ts";
import type { OutboxHandler } from "../service/delivery/index.ts";
import { sealFileSink, sealWebhookSink } from "../service/audit/index.ts";
import { loadSealKey, samePublicKey } from "../service/audit/index.ts";
import { SEAL_SINKS, type SealSigning } from "../service/audit/index.ts";
import { deliveryClient } from "../slack/deliver.ts";
import { sealSlackSink } from "../slack/seal-sink.ts";

/** Defaults of `audit.seal` when only the key is set. */
export const DEFAULT_SEAL_POLICY = { everyEvents: 1000, everySeconds: 60 } as const;

/**
 * How this server signs seals, or undefined without COUNTERSIGN_AUDIT_SEAL_KEY. Refuses to start
 * when the seal key is the grant key by its public half (loadConfig compares the texts; this also
 * catches a JWK of the grant key, and the grant key PGlite generated in the data dir).
 */
export async function auditSealing(config: Pick<Config, "auditSealKey" | "audit" | "slack">, grantKey: SigningKey): Promise<SealSigning | undefined> {
  if (!config.auditSealKey) return undefined;
  const key = await loadSealKey(config.auditSealKey).catch((err: Error) => {
    throw new StartupError("COUNTERSIGN_AUDIT_SEAL_KEY", err.message.replace(/^COUNTERSIGN_AUDIT_SEAL_KEY /, ""));
  });
  if (samePublicKey(key.privateKey, grantKey.key)) throw new StartupError("COUNTERSIGN_AUDIT_SEAL_KEY", AUDIT_KEY_IS_GRANT_KEY);
  const channel = config.slack.enabled ? config.slack.auditChannel : undefined;
  return { key, policy: config.audit?.seal ?? DEFAULT_SEAL_POLICY, ...(channel ? { slackChannel: channel } : {}) };
}

/** The outbox sinks that publish signed seals: the file, the webhook, the audit channel, as configured. */
export function sealHandlers(ctx: ServiceContext, config: Pick<Config, "slack">, signing: SealSigning | undefined): Record<string, OutboxHandler> {
  if (!signing) return {};
  const { file, webhookUrl } = signing.policy;
  return {
    ...(file ? { [SEAL_SINKS.file]: sealFileSink(file) } : {}),
    ...(webhookUrl ? { [SEAL_SINKS.webhook]: sealWebhookSink(webhookUrl) } : {}),
    ...(signing.slackChannel && config.slack.enabled
      ? { [SEAL_SINKS.slack]: sealSlackSink(ctx, deliveryClient(config.slack.botToken, config.slack.apiUrl), signing.slackChannel) }
      : {}),
  };
}
