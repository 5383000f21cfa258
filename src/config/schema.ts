import { z } from "zod";
import { POSTGRES_ROW_OPS, PostgresRowTarget } from "../plan/postgres-row-schema.ts";

import { HttpJsonTargetConfig, TargetWatch } from "../adapters/http-json-target.ts";
import { parseAllowedHost } from "../policy/callback-url.ts";
import { ChannelId, LimitsConfig, PolicyDefaults, PolicyOverride, policyOverride } from "../policy/policy-config.ts";
import { ApproverId } from "../plan/schema.ts";
import { MAX_CLAIM_WAIT_SECONDS } from "../contract/executor-api.ts";

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
  policy: policyOverride(POSTGRES_ROW_OPS).optional().describe("Overrides of `defaults` for this target; a key left out comes from `defaults`."),
  watch: TargetWatch,
}).describe("One row of a PostgreSQL table, found by its key, changed only if its version is still the one previewed.");
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

/** Default of `executor.missingAfterSeconds`, also for configs built in code that leave it out. */
export const DEFAULT_MISSING_AFTER_SECONDS = 60;
const MIN_MISSING_AFTER_SECONDS = 2 * MAX_CLAIM_WAIT_SECONDS;

const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]"]);

/** Sign in with Slack (OpenID Connect). */
export const OidcConfig = z.strictObject({
  clientId: z
    .string()
    .min(1, "is empty; copy the Client ID from the Slack app's Basic Information page")
    .meta({ description: "The Slack app's Client ID (Basic Information → App Credentials).", examples: ["1234567890.1234567890"] }),
  clientSecret: z
    .string()
    .min(1, "is empty; copy the Client Secret from the Slack app's Basic Information page (use ${VAR})")
    .meta({ description: "The Slack app's Client Secret; only the server resolves it. Give it as `${VAR}`.", examples: ["${SLACK_CLIENT_SECRET}"] }),
  // Plain http only to a loopback issuer (a local emulator): elsewhere tokens would cross the network in clear.
  issuer: z
    .url({ protocol: /^https?$/, error: "must be an https URL such as https://slack.com" })
    .refine((u) => u.startsWith("https:") || LOOPBACK.has(new URL(u).hostname), "must be https (plain http only for a loopback issuer)")
    .default("https://slack.com")
    .meta({ description: "The OpenID Connect issuer: https, or plain http to a loopback one (a local emulator).", examples: ["https://slack.com"] }),
  teamId: z
    .string()
    .regex(/^T[A-Z0-9]+$/, "must be a Slack team id such as T0123ABCD")
    .optional()
    .meta({ description: "The workspace whose people may sign in; absent: the bot token's team (required without Slack).", examples: ["T0123ABCD"] }),
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
  everyEvents: z
    .int("must be a whole number of events")
    .min(1, "must be at least 1")
    .default(1000)
    .meta({ description: "Sign the newest seal once it covers this many more events than the last signed one.", examples: [1000] }),
  everySeconds: z
    .int("must be a whole number of seconds")
    .min(1, "must be at least 1")
    .max(86_400)
    .default(60)
    .meta({ description: "Or this many seconds after the last signed one, whichever comes first.", examples: [60] }),
  file: z
    .string()
    .min(1, "is empty; name the file signed seals are appended to")
    .optional()
    .meta({ description: "A file each signature is appended to, as one JSON line.", examples: ["/var/lib/countersign/audit-seals.jsonl"] }),
  webhookUrl: z
    .url({ protocol: /^https?$/, error: "must be an http(s) URL such as https://siem.example.com/countersign-seals" })
    .optional()
    .meta({ description: "A URL each signature is POSTed to.", examples: ["https://siem.example.com/countersign-seals"] }),
});
export type AuditSealConfig = z.infer<typeof AuditSealConfig>;

/**
 * The YAML file (`countersign.yml`). Every key carries its description and an example:
 * docs/configuration.md is generated from them (`npm run gen:config-docs`).
 */
export const FileConfig = z
  .strictObject({
    environment: z
      .string()
      .regex(/^[a-z0-9][a-z0-9_-]*$/, "use lower-case letters, digits, '-' and '_'")
      .default("default")
      .meta({
        description:
          "Named in every plan and grant, so approvals given in one environment are never applied in another; `serve` and `executor` must agree. Lower-case letters, digits, `-` and `_`.",
        examples: ["production"],
      }),
    slack: z
      .strictObject({
        reviewChannel: ChannelId.optional().meta({
          description: "The channel id (not its name) where previews are posted for review; required with `SLACK_BOT_TOKEN`.",
          examples: ["C0123ABCD"],
        }),
        escalationChannel: ChannelId.optional().meta({
          description: "Where a high-risk plan nobody has approved yet is announced when one of its reminders comes due.",
          examples: ["C0456EFGH"],
        }),
        decisionRetrySeconds: z
          .int()
          .min(1)
          .max(3600)
          .optional()
          .meta({
            description:
              "How long a click waits for an unreachable database (a restart, a failover) before the clicker is told privately that it was not recorded. Absent: 120.",
            examples: [120],
          }),
        digest: z
          .strictObject({
            afterSeconds: z
              .int("must be a whole number of seconds")
              .min(0)
              .max(3600)
              .default(DIGEST_AFTER_SECONDS)
              .meta({
                description:
                  "When a channel's queue (about one post a second, plus any Retry-After Slack asks for) would delay a new preview more than this, the waiting plans are posted as one digest message instead, a line each; high-risk plans keep their own preview. 0: never.",
                examples: [30],
              }),
          })
          .optional()
          .describe("Folding previews into one digest message when Slack's pace would hold them back."),
        auditChannel: ChannelId.optional().meta({
          description: "Where signed audit seals are announced, a short message per seal (needs `COUNTERSIGN_AUDIT_SEAL_KEY`).",
          examples: ["C0789AUDIT"],
        }),
      })
      .default({})
      .describe("Reviewing in Slack. Without `SLACK_BOT_TOKEN` Countersign runs browser-only and these keys are unused."),
    defaults: PolicyDefaults.default({
      approvers: [],
      requiredApprovals: 1,
      ttl: { default: 900, max: 86_400 },
      grantTtl: 600,
      reminders: [],
      risk: "low",
      batch: true,
      edits: true,
      delegation: true,
    }).describe("The policy of every target, unless the target's own `policy` overrides a key."),
    webhooks: z
      .strictObject({
        allowedHosts: z
          .array(
            z.string().superRefine((entry, issues) => {
              const read = parseAllowedHost(entry);
              if ("error" in read) issues.addIssue({ code: "custom", message: read.error });
            }),
          )
          .default([])
          .meta({
            description:
              "Hosts a plan's `callbackUrl` may point at, checked at submit and again at each delivery: `hooks.example.com` (port 80 for http, 443 for https, no other), `localhost:8080` or `[::1]:8080` (that port only), `*.example.com` (its subdomains). Deny by default: an agent can never aim Countersign at its own network.",
            examples: [["hooks.example.com", "*.hooks.example.com"]],
          }),
        agents: z
          .record(
            z.string(),
            z.strictObject({
              callbackUrl: z.url({ protocol: /^https?$/ }).meta({
                description: "Where this agent's plans' webhooks go when a plan names no `callbackUrl`.",
                examples: ["https://hooks.example.com/countersign"],
              }),
            }),
          )
          .default({})
          .describe("A callback URL per agent name, used when a plan names none."),
      })
      .default({ allowedHosts: [], agents: {} })
      .describe("Webhooks that tell agents what became of their plans."),
    redact: z
      .strictObject({
        fields: z
          .array(z.string().min(1))
          .default([])
          .meta({
            description:
              "More field names whose values are never shown (matched without case, `_` or `-`), on top of password, secret, token, authorization, api_key, private_key, access_key, credential …",
            examples: [["iban"]],
          }),
      })
      .default({ fields: [] })
      .describe("Values never shown to reviewers, in Slack, the browser or the logs."),
    browser: z
      .strictObject({
        loginLinks: z
          .boolean()
          .default(true)
          .meta({
            description:
              "One-time sign-in links (Slack's `/countersign login`, `countersign login-link`, the link `countersign start` prints); false where only SSO may sign in.",
            examples: [false],
          }),
        oidc: OidcConfig.optional().describe(
          "Sign in with Slack (OpenID Connect), beside or instead of sign-in links. The Slack app's redirect URL is `${PUBLIC_URL}/auth/slack/callback` and its user scopes openid, profile, email.",
        ),
        readers: z
          .array(ApproverId)
          .optional()
          .meta({
            description:
              "Who may read plans besides their approvers and `admins`: Slack user ids (`U…`, `W…`) and user groups (`S…`). Absent: anyone signed in; `[]`: nobody else.",
            examples: [["U0AUDITOR", "S0SECURITY"]],
          }),
      })
      .default({ loginLinks: true })
      .describe("Reviewing in the browser: how people sign in, and who may read plans."),
    admins: z
      .array(ApproverId)
      .default([])
      .meta({ description: "People and user groups who operate Countersign: they may read every plan.", examples: [["U0OPS", "S0PLATFORM"]] }),
    executor: z
      .strictObject({
        leaseSeconds: z
          .int()
          .min(5)
          .max(3600)
          .default(60)
          .meta({
            description:
              "Seconds an executor holds a claimed plan before another may take it over; its heartbeats extend it. A plan taken over after its grant expired is only reconciled.",
            examples: [60],
          }),
        missingAfterSeconds: z
          .int("must be a whole number of seconds")
          .min(
            MIN_MISSING_AFTER_SECONDS,
            `must be at least ${MIN_MISSING_AFTER_SECONDS}: twice the longest claim wait (${MAX_CLAIM_WAIT_SECONDS} s), so an executor between two claims never counts as missing`,
          )
          .max(86_400)
          .default(DEFAULT_MISSING_AFTER_SECONDS)
          .meta({
            description:
              "Seconds after an executor's last claim, heartbeat or report (one waiting on a claim always counts) that it no longer counts as connected. While none is, approved plans show `held: no_executor`, each plan's Slack thread is told once and the review channels once per outage.",
            examples: [60],
          }),
        expected: z
          .boolean()
          .default(true)
          .meta({
            description:
              "false: this server runs without an executor on purpose. `serve` then starts without `COUNTERSIGN_EXECUTOR_TOKEN`, and Slack is not told when no executor is connected; approved plans still show that nobody applies them.",
            examples: [false],
          }),
      })
      .default({ leaseSeconds: 60, missingAfterSeconds: DEFAULT_MISSING_AFTER_SECONDS, expected: true })
      .describe("How executors share the approved plans, and when their absence is told."),
    shutdownSeconds: z
      .int("must be a whole number of seconds")
      .min(1, "must be at least 1")
      .max(3600)
      .default(10)
      .meta({
        description:
          "Seconds a server takes at most to stop on SIGTERM: readiness turns false, long-polls answer at once, live streams end, other requests finish, then it exits.",
        examples: [10],
      }),
    limits: LimitsConfig.default({ plansPerMinute: 60, maxPending: 100, agents: {} }).describe(
      "How much one agent may submit. Beyond a limit nothing is stored and no target is read; a retry with an existing plan's idempotencyKey is never limited.",
    ),
    retention: z
      .strictObject({
        days: z
          .int("must be a whole number of days")
          .min(1, "must be at least 1")
          .max(36_500)
          .default(90)
          .meta({
            description: "Delivered outbox rows older than this are deleted (and, a day after, ended browser sessions and used or expired sign-in links).",
            examples: [90],
          }),
        plans: z
          .boolean()
          .default(false)
          .meta({
            description:
              "Also delete final plans last changed over `days` ago, with their decisions and outbox rows (and, behind a checkpoint, once sealed, their audit events). Open plans are never deleted.",
            examples: [true],
          }),
      })
      .default({ days: 90, plans: false })
      .describe("What the background sweep deletes, a few hundred rows per batch."),
    audit: z
      .strictObject({
        seal: AuditSealConfig.optional().describe(
          "Signing audit seals with `COUNTERSIGN_AUDIT_SEAL_KEY`: each signature is published once, outside the database; `countersign audit verify --seals FILE` checks the database against them.",
        ),
      })
      .default({})
      .describe("The audit log: how often its newest seal is signed, and where it is published besides `slack.auditChannel`."),
    targets: z
      .record(z.string().regex(/^[a-z0-9][a-z0-9_-]*$/, "target names use lower-case letters, digits, '-' and '_'"), AnyTargetConfig)
      .default({})
      .describe(
        "The systems agents may propose changes to, by name (lower-case letters, digits, `-`, `_`). `adapter` decides the kind, and with it the other keys.",
      ),
  })
  .describe("The config file is `./countersign.yml`, or the file `COUNTERSIGN_CONFIG` names. `${VAR}` reads the environment; `$${` is a literal `${`.");
export type FileConfig = z.infer<typeof FileConfig>;

const Port = z.coerce.number().int().min(0).max(65_535);

/**
 * The environment variables Countersign reads, once, at start. What each means and who reads it
 * is in src/cli/env-help.ts, the one source `--help` and docs/configuration.md print.
 */
export const EnvConfig = z.object({
  PORT: Port.default(3000),
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
  COUNTERSIGN_GRANT_PRIVATE_KEY: z
    .string()
    .includes("PRIVATE KEY", { message: "must be a PKCS#8 PEM ('-----BEGIN PRIVATE KEY-----'); 'countersign keys generate' prints one" })
    .optional(),
  COUNTERSIGN_AUDIT_SEAL_KEY: z
    .string()
    .refine((v) => v.includes("PRIVATE KEY") || v.trim().startsWith("{"), {
      message: "must be an Ed25519 private key as a PKCS#8 PEM ('-----BEGIN PRIVATE KEY-----') or a JWK; 'countersign keys generate --audit-seal' prints one",
    })
    .optional(),
  COUNTERSIGN_EXECUTOR_TOKEN: z.string().min(16, "must be at least 16 characters; use a long random string").optional(),
  COUNTERSIGN_METRICS_TOKEN: z.string().min(16, "must be at least 16 characters; use a long random string").optional(),
  SLACK_BOT_TOKEN: z.string().startsWith("xoxb-", "must be a bot token (xoxb-…) from the app's OAuth & Permissions page").optional(),
  SLACK_SIGNING_SECRET: z.string().min(8).optional(),
  SLACK_APP_TOKEN: z.string().startsWith("xapp-", "must be an app-level token (xapp-…) with connections:write").optional(),
  SLACK_API_URL: z.url({ protocol: /^https?$/ }).optional(),
  COUNTERSIGN_URL: z.url({ protocol: /^https?$/ }).optional(),
  COUNTERSIGN_GRANT_PUBLIC_KEY: z
    .string()
    .includes("PUBLIC KEY", { message: "must be an SPKI PEM ('-----BEGIN PUBLIC KEY-----'); 'countersign keys generate' prints one" })
    .optional(),
});
