import { z } from "zod";
import { POSTGRES_ROW_OPS, PostgresRowTarget } from "../plan/postgres-row-schema.ts";

import { HttpJsonTargetConfig, TargetWatch } from "../adapters/http-json-target.ts";
import { parseAllowedHost } from "../policy/callback-url.ts";
import { ChannelId, LimitsConfig, PolicyDefaults, PolicyOverride, policyOverride } from "../policy/policy-config.ts";
import { ApproverId } from "../plan/schema.ts";

export { LimitsConfig, PolicyDefaults, PolicyOverride };
/** The http.json target's block, named as every config reader knows it. */
export const TargetConfig = HttpJsonTargetConfig;
export type TargetConfig = HttpJsonTargetConfig;
export { HttpJsonTargetConfig };

/**
 * A `postgres.row` target: the adapter's own target schema (src/plan/postgres-row-schema.ts:
 * read/write connections, tables, allow) plus what the server keeps for every kind (policy, watch).
 */
export const PostgresRowTargetConfig = PostgresRowTarget.safeExtend({
  policy: policyOverride(POSTGRES_ROW_OPS).optional(),
  watch: TargetWatch,
});
export type PostgresRowTargetConfig = z.infer<typeof PostgresRowTargetConfig>;

/** The adapters a target may name, for errors that list them. */
export const TARGET_ADAPTERS = ["http.json", "postgres.row"] as const;

/**
 * `targets.<name>`: one block per target, its keys decided by `adapter`. An adapter that is
 * missing or unknown is refused naming the kinds there are.
 */
export const AnyTargetConfig = z.discriminatedUnion("adapter", [TargetConfig, PostgresRowTargetConfig], {
  error: (issue) => {
    if (issue.code !== "invalid_union") return undefined;
    const kinds = TARGET_ADAPTERS.map((k) => `'${k}'`).join(" or ");
    const adapter = typeof issue.input === "object" && issue.input !== null ? (issue.input as { adapter?: unknown }).adapter : undefined;
    return adapter === undefined
      ? `is missing; name the kind of target: ${kinds}`
      : `${JSON.stringify(adapter).slice(0, 60)} is not a kind of target Countersign has; use ${kinds}`;
  },
});
export type AnyTargetConfig = z.infer<typeof AnyTargetConfig>;

const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]"]);

/** Sign in with Slack (OpenID Connect). */
export const OidcConfig = z.strictObject({
  clientId: z.string().min(1, "is empty; copy the Client ID from the Slack app's Basic Information page"),
  clientSecret: z.string().min(1, "is empty; copy the Client Secret from the Slack app's Basic Information page (use ${VAR})"),
  // Plain http only to a loopback issuer (a local emulator): elsewhere tokens would cross the network in clear.
  issuer: z
    .url({ protocol: /^https?$/, error: "must be an https URL such as https://slack.com" })
    .refine((u) => u.startsWith("https:") || LOOPBACK.has(new URL(u).hostname), "must be https (plain http only for a loopback issuer)")
    .default("https://slack.com"),
  /** The workspace whose people may sign in; defaults to the bot token's team. */
  teamId: z
    .string()
    .regex(/^T[A-Z0-9]+$/, "must be a Slack team id such as T0123ABCD")
    .optional(),
});
export type OidcConfig = z.infer<typeof OidcConfig>;

/** Default of `slack.digest.afterSeconds`: how long a preview may wait in its channel's queue before a digest is posted instead. */
export const DIGEST_AFTER_SECONDS = 30;

/**
 * Signing audit seals: the newest seal is signed once it covers `everyEvents` more events than the
 * last signed one, or `everySeconds` after it, whichever comes first; each signature is appended
 * to `file` as one JSON line and POSTed to `webhookUrl` (and told to slack.auditChannel).
 */
export const AuditSealConfig = z.strictObject({
  everyEvents: z.int("must be a whole number of events").min(1, "must be at least 1").default(1000),
  everySeconds: z.int("must be a whole number of seconds").min(1, "must be at least 1").max(86_400).default(60),
  file: z.string().min(1, "is empty; name the file signed seals are appended to").optional(),
  webhookUrl: z.url({ protocol: /^https?$/, error: "must be an http(s) URL such as https://siem.example.com/countersign-seals" }).optional(),
});
export type AuditSealConfig = z.infer<typeof AuditSealConfig>;

/** The YAML file (`countersign.yml`). Every key is documented in `countersign.example.yml`. */
export const FileConfig = z.strictObject({
  environment: z
    .string()
    .regex(/^[a-z0-9][a-z0-9_-]*$/, "use lower-case letters, digits, '-' and '_'")
    .default("default"),
  slack: z
    .strictObject({
      reviewChannel: ChannelId.optional(),
      /** Where high-risk plans that nobody has approved yet are escalated when a reminder comes due. */
      escalationChannel: ChannelId.optional(),
      /** How long a click waits for an unreachable database (a restart, a failover) before the clicker is told it was not recorded (default 120). */
      decisionRetrySeconds: z.int().min(1).max(3600).optional(),
      /**
       * When a channel's queue would delay a new preview more than `afterSeconds`, the waiting plans
       * are posted as one digest message instead (high-risk ones keep their own preview); 0: never.
       */
      digest: z
        .strictObject({
          afterSeconds: z.int("must be a whole number of seconds").min(0).max(3600).default(DIGEST_AFTER_SECONDS),
        })
        .optional(),
      /** Where signed audit seals are published: a short message per signed seal. */
      auditChannel: ChannelId.optional(),
    })
    .default({}),
  defaults: PolicyDefaults.default({ approvers: [], requiredApprovals: 1, ttl: { default: 900, max: 86_400 }, grantTtl: 600, reminders: [], risk: "low" }),
  webhooks: z
    .strictObject({
      /**
       * Hosts callbacks may go to, checked at submit and again at each delivery: "hooks.example.com" (port 80 for http,
       * 443 for https, no other), "localhost:8080" or "[::1]:8080" (that port only), "*.example.com" (its subdomains).
       * Deny by default: no SSRF into the server's network.
       */
      allowedHosts: z
        .array(
          z.string().superRefine((entry, issues) => {
            const read = parseAllowedHost(entry);
            if ("error" in read) issues.addIssue({ code: "custom", message: read.error });
          }),
        )
        .default([]),
      /** A callback URL per agent name, used when a plan names none. */
      agents: z.record(z.string(), z.strictObject({ callbackUrl: z.url({ protocol: /^https?$/ }) })).default({}),
    })
    .default({ allowedHosts: [], agents: {} }),
  redact: z
    .strictObject({
      /** More field names to treat as secret, on top of password, token, secret, authorization, api_key, private_key, … */
      fields: z.array(z.string().min(1)).default([]),
    })
    .default({ fields: [] }),
  browser: z
    .strictObject({
      /** One-time sign-in links (Slack's /countersign login, `countersign login-link`); switch off where only SSO may sign in. */
      loginLinks: z.boolean().default(true),
      /** Sign in with Slack (OpenID Connect): the app's client id and secret from its Basic Information page. */
      oidc: OidcConfig.optional(),
      /** Who may read plans besides their approvers and admins (user ids and user groups); absent: anyone signed in. */
      readers: z.array(ApproverId).optional(),
    })
    .default({ loginLinks: true }),
  /** People and user groups who operate Countersign: they may read every plan. */
  admins: z.array(ApproverId).default([]),
  executor: z
    .strictObject({
      /** Seconds an executor holds a claimed plan before another may take it over; heartbeats extend it. */
      leaseSeconds: z.int().min(5).max(3600).default(60),
    })
    .default({ leaseSeconds: 60 }),
  limits: LimitsConfig.default({ plansPerMinute: 60, maxPending: 100, agents: {} }),
  /** What the background sweep deletes: delivered outbox rows after `days`, and with `plans: true` final plans too. */
  retention: z
    .strictObject({
      days: z.int("must be a whole number of days").min(1, "must be at least 1").max(36_500).default(90),
      /** Delete final plans last changed over `days` ago, with their decisions, outbox rows and (behind a checkpoint, once sealed) audit events. */
      plans: z.boolean().default(false),
    })
    .default({ days: 90, plans: false }),
  /** The audit log: how often the newest seal is signed with COUNTERSIGN_AUDIT_SEAL_KEY and where it is published besides slack.auditChannel. */
  audit: z.strictObject({ seal: AuditSealConfig.optional() }).default({}),
  targets: z.record(z.string().regex(/^[a-z0-9][a-z0-9_-]*$/, "target names use lower-case letters, digits, '-' and '_'"), AnyTargetConfig).default({}),
});
export type FileConfig = z.infer<typeof FileConfig>;

const Port = z.coerce.number().int().min(0).max(65_535);

/** The environment variables Countersign reads, once, at start. */
export const EnvConfig = z.object({
  PORT: Port.default(3000),
  /** The interface `serve` listens on; `start` always uses 127.0.0.1. */
  HOST: z
    .string()
    .regex(
      /^([0-9a-fA-F:.]+|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?)$/,
      "must be an interface address or host name such as 0.0.0.0, 127.0.0.1, :: or localhost",
    )
    .default("0.0.0.0"),
  PUBLIC_URL: z.url({ protocol: /^https?$/ }).optional(),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, "must be a postgres:// URL")
    .optional(),
  COUNTERSIGN_DATA_DIR: z.string().min(1).default("./.countersign"),
  COUNTERSIGN_CONFIG: z.string().min(1).optional(),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  /** Server: PKCS#8 PEM of the Ed25519 key that signs grants (`countersign keys generate`). */
  COUNTERSIGN_GRANT_PRIVATE_KEY: z
    .string()
    .includes("PRIVATE KEY", { message: "must be a PKCS#8 PEM ('-----BEGIN PRIVATE KEY-----'); 'countersign keys generate' prints one" })
    .optional(),
  /** Server: the Ed25519 key (PKCS#8 PEM or private JWK) that signs audit seals; never the grant key (`countersign keys generate --audit-seal`). */
  COUNTERSIGN_AUDIT_SEAL_KEY: z
    .string()
    .refine((v) => v.includes("PRIVATE KEY") || v.trim().startsWith("{"), {
      message: "must be an Ed25519 private key as a PKCS#8 PEM ('-----BEGIN PRIVATE KEY-----') or a JWK; 'countersign keys generate --audit-seal' prints one",
    })
    .optional(),
  /** Server and executor: the shared secret of the executor API. */
  COUNTERSIGN_EXECUTOR_TOKEN: z.string().min(16, "must be at least 16 characters; use a long random string").optional(),
  /** Server: when set, GET /metrics requires it as a bearer token. */
  COUNTERSIGN_METRICS_TOKEN: z.string().min(16, "must be at least 16 characters; use a long random string").optional(),
  SLACK_BOT_TOKEN: z.string().startsWith("xoxb-", "must be a bot token (xoxb-…) from the app's OAuth & Permissions page").optional(),
  SLACK_SIGNING_SECRET: z.string().min(8).optional(),
  /** Socket Mode when set (xapp-…): no public URL needed. */
  SLACK_APP_TOKEN: z.string().startsWith("xapp-", "must be an app-level token (xapp-…) with connections:write").optional(),
  /** The Web API base; tests point it at the Slack emulator. */
  SLACK_API_URL: z.url({ protocol: /^https?$/ }).optional(),
  /** Executor: the server to claim plans from. */
  COUNTERSIGN_URL: z.url({ protocol: /^https?$/ }).optional(),
  /** Executor: SPKI PEM(s) of the grant signing key(s) it trusts. */
  COUNTERSIGN_GRANT_PUBLIC_KEY: z
    .string()
    .includes("PUBLIC KEY", { message: "must be an SPKI PEM ('-----BEGIN PUBLIC KEY-----'); 'countersign keys generate' prints one" })
    .optional(),
});
