import { sql } from "drizzle-orm";
import {
  bigint,
  bigserial,
  boolean,
  check,
  customType,
  doublePrecision,
  index,
  integer,
  pgEnum,
  pgTable,
  primaryKey,
  smallint,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from "drizzle-orm/pg-core";
import { PLAN_STATUSES } from "../plan/status.ts";

/**
 * JSON kept as text, not jsonb: jsonb refuses U+0000 and reorders keys, and a plan document
 * must come back exactly as it was hashed, whatever a target or agent put in it.
 */
const jsonText = <T>(name: string) =>
  customType<{ data: T; driverData: string }>({
    dataType: () => "text",
    toDriver: (value) => JSON.stringify(value),
    fromDriver: (value) => JSON.parse(value) as T,
  })(name);

const at = (name: string) => timestamp(name, { withTimezone: true, mode: "date" });

// drizzle-kit only emits CREATE TYPE for enums exported from this module.
export const planStatus = pgEnum("plan_status", PLAN_STATUSES);
export const decisionVia = pgEnum("decision_via", ["slack", "web"]);
export const verdict = pgEnum("verdict", ["approve", "reject"]);

export const agents = pgTable("agents", {
  id: uuid("id").primaryKey().defaultRandom(),
  name: text("name").notNull().unique(),
  /** sha256 of the API key; the key itself is shown once and never stored. */
  keyHash: text("key_hash").notNull().unique(),
  /** Signs this agent's webhooks (HMAC): kept, not hashed, because the server must sign with it. */
  webhookSecret: text("webhook_secret"),
  createdAt: at("created_at").notNull().defaultNow(),
  revokedAt: at("revoked_at"),
});

/**
 * How many plans each agent has ever stored: one row per admission slot of the
 * guard (0..7, the one its submission holds; 8 for a plan inserted without the guard), kept by the
 * plans INSERT trigger. Their sum is at least any count the agent limits make (plans in the
 * minute, plans open), so while it stays 8 or more below both limits the guard admits without
 * counting. Rows are only ever incremented; a purged plan stays counted (a bound, not a count).
 */
export const agentAdmissions = pgTable(
  "agent_admissions",
  {
    agentId: uuid("agent_id").notNull(),
    slot: smallint("slot").notNull(),
    admitted: bigint("admitted", { mode: "number" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.agentId, t.slot] })],
);

export const plans = pgTable(
  "plans",
  {
    id: uuid("id").primaryKey(),
    agentId: uuid("agent_id")
      .notNull()
      .references(() => agents.id),
    hash: text("hash").notNull(),
    document: jsonText<unknown>("document").notNull(),
    preview: jsonText<unknown>("preview").notNull(),
    status: planStatus("status").notNull().default("pending"),
    expiresAt: at("expires_at").notNull(),
    idempotencyKey: text("idempotency_key"),
    /** Fingerprint of the request body, to tell a retry from a different plan under the same key. */
    requestDigest: text("request_digest").notNull(),
    rejectReason: text("reject_reason"),
    /** Where the agent hears about status changes; not part of the hash (it changes no target). */
    callbackUrl: text("callback_url"),
    /** The signed grant (compact JWS) issued when the plan was approved, and when it stops being valid. */
    grant: text("grant"),
    grantExpiresAt: at("grant_expires_at"),
    /** Fencing token of the executor that holds the plan now; a report under any other token is refused. */
    claimToken: text("claim_token"),
    leaseExpiresAt: at("lease_expires_at"),
    claims: integer("claims").notNull().default(0),
    outcome: jsonText<unknown>("outcome"),
    /** The earlier version this plan replaces (`supersedes`), and the later one that replaced this. */
    supersedes: uuid("supersedes"),
    supersededBy: uuid("superseded_by"),
    /**
     * An undo: the applied plan it takes back (`undoes` in its document). And on that plan, the
     * undo that took it back, set once when the undo is applied.
     */
    undoes: uuid("undoes"),
    undoneBy: uuid("undone_by"),
    createdAt: at("created_at").notNull().defaultNow(),
    updatedAt: at("updated_at").notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("plans_agent_idempotency_key").on(t.agentId, t.idempotencyKey),
    index("plans_status_expires_at").on(t.status, t.expiresAt),
    index("plans_agent_created_at").on(t.agentId, t.createdAt),
    uniqueIndex("plans_claim_token").on(t.claimToken),
    // The browser's list, newest first, and its status filters: read from the index's end
    // instead of sorting every plan (pending plans are listed by plans_status_expires_at).
    index("plans_created_at").on(t.createdAt),
    index("plans_status_created_at").on(t.status, t.createdAt),
    // Pending plans in the list's order (soonest expiry, then id): a page after a cursor reads just
    // that page. Statistics rarely know how many plans expire in the future, and with the
    // (status, expires_at) index the planner then sorted every remaining pending plan per page.
    index("plans_pending_expiry").on(t.expiresAt, t.id).where(sql`status = 'pending'`),
    // Agent limits: an agent's open plans are counted, and its soonest pending expiry
    // read, from this index alone, however many final plans it has.
    index("plans_agent_open").on(t.agentId, t.status, t.expiresAt).where(sql`status IN ('pending', 'approved')`),
    // Retention: final plans by last change, the order countersign_purge_plans() takes
    // them in small batches, without reading the open ones or the whole table. Open statuses
    // named: a migration run in one transaction with the one that adds a status may not name
    // it, and an index predicate may not cast the enum to text (not immutable).
    index("plans_final_updated_at").on(t.updatedAt).where(sql`status NOT IN ('pending', 'approved', 'executing')`),
    // A plan's undos, for "is one open already": read under the plan's row lock when one is asked for.
    index("plans_undoes").on(t.undoes).where(sql`undoes IS NOT NULL`),
  ],
);

export const decisions = pgTable(
  "decisions",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    planId: uuid("plan_id")
      .notNull()
      .references(() => plans.id),
    /** The hash the person saw and clicked on; always equal to the plan's, or the decision is refused. */
    planHash: text("plan_hash").notNull(),
    userId: text("user_id").notNull(),
    via: decisionVia("via").notNull(),
    verdict: verdict("verdict").notNull(),
    reason: text("reason"),
    /**
     * An approval recorded although the targets could not be re-read at the click:
     * why, as the person was told ("could not re-check"). Null when the re-check ran, or none was due.
     */
    recheckFailed: text("recheck_failed"),
    decidedAt: at("decided_at").notNull().defaultNow(),
    /** The plan's expiry when the decision was made: a decision never outlives the plan it binds to. */
    expiresAt: at("expires_at").notNull(),
    /** The person the decider acted for through a delegation (src/service/delegation/); null when they acted as themselves. */
    forUser: text("for_user"),
  },
  (t) => [uniqueIndex("decisions_one_vote_per_person").on(t.planId, t.userId, t.verdict)],
);

/** A 64-bit transaction id (PostgreSQL's xid8), kept as its decimal text. */
const xid8 = customType<{ data: string; driverData: string }>({ dataType: () => "xid8" });

/**
 * The audit log: one hash chain per plan and one for events with no plan, tied together by
 * audit_seals (src/service/records/audit.ts and seal-audit.ts; docs/design.md, "Audit log").
 */
export const auditEvents = pgTable(
  "audit_events",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    planId: uuid("plan_id"),
    type: text("type").notNull(),
    actor: jsonText<unknown>("actor").notNull(),
    data: jsonText<unknown>("data").notNull(),
    at: at("at").notNull(),
    /** Hash chain: each event's hash covers the previous one of its chain, so edits and deletions show. */
    prevHash: text("prev_hash").notNull(),
    hash: text("hash").notNull(),
    /** The writing transaction: the sealer's boundary (ids commit out of order, transactions below the snapshot's xmin are final). */
    xid: xid8("xid").default(sql`pg_current_xact_id()`),
  },
  (t) => [
    index("audit_events_plan").on(t.planId, t.id),
    /** The sealer's and the list version's "since the last seal". */
    index("audit_events_xid").on(t.xid),
    /** A chain never forks: an append that read a stale tail fails instead of branching the chain. */
    uniqueIndex("audit_events_one_successor").on(t.prevHash).where(sql`xid IS NOT NULL`),
  ],
);

/**
 * Seals over the audit log, written by one replica at a time every few seconds: seal n covers
 * every event whose transaction id is in [xid_from, xid_to), and its hash covers seal n-1's
 * (seal 1's covers the genesis hash). The newest seal is the head of the whole log: what
 * sign-seals.ts signs and publishes. Append-only.
 */
export const auditSeals = pgTable("audit_seals", {
  seq: bigint("seq", { mode: "number" }).primaryKey(),
  prevHash: text("prev_hash").notNull(),
  xidFrom: xid8("xid_from").notNull(),
  xidTo: xid8("xid_to").notNull(),
  /** How many events this seal covers, and all seals up to it (the list version counts on it). */
  events: integer("events").notNull(),
  eventsTotal: bigint("events_total", { mode: "number" }).notNull(),
  hash: text("hash").notNull(),
  sealedAt: at("sealed_at").notNull(),
});

/**
 * Signed seals (src/service/audit/sign-seals.ts): every so often the newest seal's canonical
 * statement (seq, hash, xid_to, sealed_at, events_total) signed with COUNTERSIGN_AUDIT_SEAL_KEY,
 * written with its publication's outbox rows, so it is published once whatever the replicas.
 * Append-only, like the seals it signs.
 */
export const auditSealSignatures = pgTable("audit_seal_signatures", {
  seq: bigint("seq", { mode: "number" }).primaryKey(),
  /** The RFC 8785 JSON that was signed, exactly as signed. */
  statement: text("statement").notNull(),
  /** RFC 7638 thumbprint of the seal key's public half. */
  kid: text("kid").notNull(),
  /** Ed25519 signature of the statement's UTF-8 bytes, base64url. */
  signature: text("signature").notNull(),
  signedAt: at("signed_at").notNull(),
});

/**
 * The checkpoint a retention purge leaves for the audit events it deletes (written only
 * by countersign_purge_plans(), in the transaction that deletes them, never changed): per pruned
 * event what the seals and chains need without its content, its id, plan, transaction, time and
 * both hashes. Only events under a seal the metrics rollup has counted (and, once seals are
 * signed, under a signed one) are pruned, so `audit verify` rebuilds every seal from the events
 * that remain plus these lines.
 */
export const auditPruned = pgTable(
  "audit_pruned",
  {
    id: bigint("id", { mode: "number" }).primaryKey(),
    planId: uuid("plan_id").notNull(),
    xid: xid8("xid").notNull(),
    at: at("at").notNull(),
    prevHash: text("prev_hash").notNull(),
    hash: text("hash").notNull(),
    /** The purges row of the call that deleted it. */
    purgeId: bigint("purge_id", { mode: "number" }).notNull(),
  },
  (t) => [
    /** A seal's range, as audit_events_xid is for the events that remain. */
    index("audit_pruned_xid").on(t.xid),
    /** A pruned plan's chain, walked like the others in (plan_id, id) order. */
    index("audit_pruned_plan").on(t.planId, t.id),
  ],
);

export const outbox = pgTable(
  "outbox",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    planId: uuid("plan_id"),
    /** Which sink delivers it, e.g. "slack.post", "webhook". */
    kind: text("kind").notNull(),
    /**
     * The queue it waits in (src/service/records/outbox-lanes.ts): `slack:<channel>`, `webhook:<agent>`,
     * or the kind. Lanes drain independently.
     */
    lane: text("lane").notNull(),
    /** Order within the lane before id: 0 for a Slack preview (posted before older plans' replies), 1 otherwise. */
    priority: smallint("priority").notNull().default(1),
    payload: jsonText<unknown>("payload").notNull(),
    createdAt: at("created_at").notNull().defaultNow(),
    availableAt: at("available_at").notNull().defaultNow(),
    attempts: integer("attempts").notNull().default(0),
    lastError: text("last_error"),
    deliveredAt: at("delivered_at"),
    deadAt: at("dead_at"),
  },
  // Delivered rows pile up (several per plan, kept); every index the worker reads covers only the
  // undelivered ones, so a lease costs the same at 4 M delivered rows as at none. There is no index
  // on available_at alone: nothing reads rows by it across lanes, and on a table
  // without statistics yet (a fresh install taking a burst) the planner took a lane's rows through
  // it, filtering out every other lane's backlog: 2–4 ms a take with 2 600 rows queued elsewhere.
  (t) => [
    /**
     * A lane's rows in delivery order (previews first, then oldest), and the distinct lanes with
     * work (a skip scan on its first column). available_at is in the index so rows still backing
     * off are passed over without reading the table (the planner cannot tell undelivered rows'
     * available_at from delivered ones').
     */
    index("outbox_lane_order").on(t.lane, t.priority, t.id, t.availableAt).where(sql`delivered_at IS NULL AND dead_at IS NULL`),
    /** The lease's "an earlier row of the same plan and sink is undelivered" probe. */
    index("outbox_undelivered_plan_kind").on(t.planId, t.kind, t.id).where(sql`delivered_at IS NULL AND dead_at IS NULL`),
    /** The plan page's dead-lettered deliveries (and the live stream's count of them). */
    index("outbox_dead_plan").on(t.planId, t.id).where(sql`dead_at IS NOT NULL`),
    /** Retention: delivered rows past `retention.days`, oldest first, in small batches. */
    index("outbox_delivered_at").on(t.deliveredAt).where(sql`delivered_at IS NOT NULL`),
  ],
);

/**
 * Who drains each outbox lane now: a worker takes a lane by setting leased_by (a token of its
 * own) and leased_until, delivers its rows in order, and gives it back; a worker that dies leaves
 * its lease to run out. leased_until also holds a lane back after a 429 (Retry-After).
 */
export const outboxLanes = pgTable("outbox_lanes", {
  lane: text("lane").primaryKey(),
  leasedBy: text("leased_by"),
  leasedUntil: at("leased_until").notNull(),
});

/** Where a plan's preview lives in Slack, so updates and thread replies find it (and a redelivery does not post it twice). */
export const slackMessages = pgTable(
  "slack_messages",
  {
    planId: uuid("plan_id")
      .primaryKey()
      .references(() => plans.id),
    channel: text("channel").notNull(),
    ts: text("ts").notNull(),
    postedAt: at("posted_at").notNull().defaultNow(),
    /** The message is a digest listing several plans (src/slack/digest.ts), not this plan's own preview. */
    digest: boolean("digest").notNull().default(false),
    /**
     * The root of the thread this message is a reply in: a re-plan's preview is posted in its
     * first version's thread, and its own replies go there too. Null: `ts` is the root.
     */
    threadTs: text("thread_ts"),
  },
  // A digest is re-rendered from all its plans whenever one of them changes.
  (t) => [index("slack_messages_digest").on(t.channel, t.ts).where(sql`digest`)],
);

/** The next moment each channel may take a post: ~1 per second per channel, shared by every replica. */
export const slackChannelSlots = pgTable("slack_channel_slots", {
  channel: text("channel").primaryKey(),
  nextAt: at("next_at").notNull(),
});

/** One-time browser sign-in links; only a hash of the token is kept. */
export const loginLinks = pgTable("login_links", {
  tokenHash: text("token_hash").primaryKey(),
  userId: text("user_id").notNull(),
  name: text("name"),
  /** Who asked for it: "slack" (/countersign login) or "cli" (countersign login-link). */
  via: text("via").notNull(),
  createdAt: at("created_at").notNull(),
  expiresAt: at("expires_at").notNull(),
  usedAt: at("used_at"),
});

/** Browser sessions, each bound to a Slack user id; the cookie holds the id, the table its hash. */
export const webSessions = pgTable("web_sessions", {
  idHash: text("id_hash").primaryKey(),
  userId: text("user_id").notNull(),
  name: text("name"),
  csrfToken: text("csrf_token").notNull(),
  createdAt: at("created_at").notNull(),
  expiresAt: at("expires_at").notNull(),
  endedAt: at("ended_at"),
});

/** Which reminder points a plan has had, so each reminder is sent once however many replicas sweep. */
export const planReminders = pgTable(
  "plan_reminders",
  {
    planId: uuid("plan_id")
      .notNull()
      .references(() => plans.id),
    secondsBefore: integer("seconds_before").notNull(),
    sentAt: at("sent_at").notNull(),
  },
  (t) => [uniqueIndex("plan_reminders_once").on(t.planId, t.secondsBefore)],
);

/**
 * What `countersign_purge_plans()` removed, and why: the one way rows leave the append-only
 * tables is through that function, and each call leaves its mark here (itself append-only).
 */
export const purges = pgTable("purges", {
  id: bigserial("id", { mode: "number" }).primaryKey(),
  at: at("at").notNull().defaultNow(),
  /** The database role that called the function (session_user), for whoever reviews purges. */
  byRole: text("by_role").notNull(),
  reason: text("reason").notNull(),
  /** Final plans last changed before this moment were removed. */
  before: at("before").notNull(),
  plans: integer("plans").notNull(),
  decisions: integer("decisions").notNull(),
  outbox: integer("outbox").notNull(),
  /** Audit events deleted with the plans, each left as a line of audit_pruned. */
  auditEvents: integer("audit_events").notNull().default(0),
});

/**
 * The kill switch: a row here means Countersign is paused, and no executor is handed
 * a plan (claimApproved reads this table in its one UPDATE, so a claim never depends on a replica
 * having heard of the pause). At most one row (id 1); resuming deletes it. Who paused and resumed
 * when is in the audit log.
 */
export const pause = pgTable(
  "pause",
  {
    id: smallint("id").primaryKey().default(1),
    reason: text("reason").notNull(),
    /** Who paused: a Slack user id (the browser) or an operating-system user (the CLI). */
    pausedBy: text("paused_by").notNull(),
    /** "web" or "cli". */
    via: text("via").notNull(),
    since: at("since").notNull(),
  },
  (t) => [check("pause_one_row", sql`${t.id} = 1`)],
);

/**
 * When each executor last asked for work, kept a heartbeat or reported
 * (src/service/execution/executor-presence.ts), so every replica agrees whether one is connected.
 * One row per executor id it sends; the row with the empty id stands for "none seen yet" and
 * exists only to record that this was announced. `absence_noticed_at` is set on the newest row
 * once the review channels are told no executor is connected, and cleared when that executor is
 * seen again: a later outage is told again.
 */
export const executorPresence = pgTable("executor_presence", {
  executor: text("executor").primaryKey(),
  lastSeenAt: at("last_seen_at"),
  absenceNoticedAt: at("absence_noticed_at"),
});

/**
 * Refusals answered, per error code (`countersign_refusals_total{code}`): a refusal
 * records nothing else, so this count is the only trace a scrape can read. One upsert each.
 */
export const refusalCounts = pgTable("refusal_counts", {
  code: text("code").primaryKey(),
  count: bigint("count", { mode: "number" }).notNull().default(0),
});

/**
 * The metrics counted from the audit log (src/service/operations/metrics.ts), summed up to a seal so a scrape
 * reads only the events since: one row per metric, label and histogram bucket (-1 for a counter).
 */
export const metricsRollup = pgTable(
  "metrics_rollup",
  {
    metric: text("metric").notNull(),
    label: text("label").notNull(),
    bucket: smallint("bucket").notNull(),
    count: bigint("count", { mode: "number" }).notNull(),
    sum: doublePrecision("sum").notNull(),
  },
  (t) => [primaryKey({ columns: [t.metric, t.label, t.bucket] })],
);

/** How far metrics_rollup goes: every event whose transaction id is below through_xid. One row at most. */
export const metricsRollupState = pgTable(
  "metrics_rollup_state",
  {
    id: smallint("id").primaryKey().default(1),
    throughXid: xid8("through_xid").notNull(),
    /** The histogram buckets the rollup was counted with; a change starts it over. */
    buckets: text("buckets").notNull(),
  },
  (t) => [check("metrics_rollup_state_one_row", sql`${t.id} = 1`)],
);

/**
 * The watcher's work list (src/service/watch/watch-targets.ts): one row per target resource
 * some open plan's action is on. A replica takes due rows with FOR UPDATE SKIP LOCKED and pushes
 * next_at one interval ahead in the same statement, so a resource is read at most once an
 * interval whatever the replicas; the read itself happens after that commits.
 */
export const targetWatches = pgTable(
  "target_watches",
  {
    target: text("target").notNull(),
    path: text("path").notNull(),
    nextAt: at("next_at").notNull(),
    /** The replica reading it now, until when (a replica that dies mid-read leaves it to next_at). */
    leasedBy: text("leased_by"),
    leasedUntil: at("leased_until"),
    /** The last read that answered, and since when reads have failed (null while they answer). */
    checkedAt: at("checked_at"),
    failedSince: at("failed_since"),
    lastError: text("last_error"),
  },
  (t) => [primaryKey({ columns: [t.target, t.path] }), index("target_watches_next_at").on(t.nextAt)],
);

/**
 * Which open plan's action is on which watched resource: written once per plan when the watcher
 * first sees it, read by (target, path) when that resource is re-read, and dropped with the
 * resource's watch once no open plan needs it.
 */
export const watchedActions = pgTable(
  "watched_actions",
  {
    planId: uuid("plan_id").notNull(),
    actionIndex: smallint("action_index").notNull(),
    target: text("target").notNull(),
    path: text("path").notNull(),
  },
  (t) => [primaryKey({ columns: [t.planId, t.actionIndex] }), index("watched_actions_target_path").on(t.target, t.path)],
);

/**
 * Batches of alike plans opened by a reviewer (src/service/batch/): the exact plans and hashes
 * they were shown, so Approve-all and Reject-all decide on those versions and no others, for ten
 * minutes. Each plan is still decided on its own; this row only says what was on the screen.
 */
export const batches = pgTable(
  "batches",
  {
    id: uuid("id").primaryKey(),
    /** The Slack user id of the person who opened it: nobody else may decide through it. */
    reviewer: text("reviewer").notNull(),
    /** Where it was opened: "slack" (a modal) or "web" (the batch page). */
    via: text("via").notNull(),
    /** The likeness its plans share (src/plan/alike.ts). */
    likeness: text("likeness").notNull(),
    /** The (plan id, hash) pairs shown, oldest plan first. */
    plans: jsonText<{ planId: string; hash: string }[]>("plans").notNull(),
    /** How many more alike plans waited for this reviewer than the batch holds. */
    more: integer("more").notNull(),
    createdAt: at("created_at").notNull(),
    expiresAt: at("expires_at").notNull(),
  },
  (t) => [index("batches_expires_at").on(t.expiresAt)],
);

/**
 * People's Slack display names, one row per person, for the browser to name them. Filled by a
 * background refresh (src/service/people/), never on a request's path: a replica claims a row by
 * pushing next_at ahead, then asks Slack's users.info, so a person is asked about at most once a day.
 */
export const people = pgTable(
  "people",
  {
    userId: text("user_id").primaryKey(),
    /** Null until Slack has answered for this person. */
    displayName: text("display_name"),
    /** When Slack last answered with the name. */
    fetchedAt: at("fetched_at"),
    /** When the name may be asked for again. */
    nextAt: at("next_at").notNull(),
  },
  (t) => [index("people_display_name").on(sql`lower(${t.displayName})`)],
);

/**
 * People deciding in another's place while they are away (src/service/delegation/): the delegate
 * may decide, revoke and edit wherever the delegator may, until `until` or until it is ended
 * early. Not transitive: a delegate's own delegations do not pass on what they hold.
 */
export const delegations = pgTable(
  "delegations",
  {
    id: uuid("id").primaryKey(),
    /** The Slack user id of the person who is away. */
    delegator: text("delegator").notNull(),
    /** The Slack user id of the person deciding in their place. */
    delegate: text("delegate").notNull(),
    /** The end of the last day, in the delegator's time zone. */
    until: at("until").notNull(),
    /** The targets it covers; null for every target. */
    targets: jsonText<string[]>("targets"),
    /** Who made it: a Slack user id, or `cli:<name>` for an admin at the command line. */
    createdBy: text("created_by").notNull(),
    createdAt: at("created_at").notNull(),
    /** Set once when it is ended early; a delegation past `until` is over without it. */
    endedAt: at("ended_at"),
    endedBy: text("ended_by"),
  },
  (t) => [
    // What a click asks: the delegations this person holds now (few per person, read by key).
    index("delegations_delegate_open").on(t.delegate, t.until).where(sql`ended_at IS NULL`),
    index("delegations_delegator_open").on(t.delegator, t.until).where(sql`ended_at IS NULL`),
  ],
);
