CREATE TYPE "public"."decision_via" AS ENUM('slack', 'web');--> statement-breakpoint
CREATE TYPE "public"."plan_status" AS ENUM('pending', 'approved', 'rejected', 'expired', 'cancelled', 'executing', 'applied', 'failed', 'stale', 'superseded', 'revoked');--> statement-breakpoint
CREATE TYPE "public"."verdict" AS ENUM('approve', 'reject');--> statement-breakpoint
CREATE TABLE "agent_admissions" (
	"agent_id" uuid NOT NULL,
	"slot" smallint NOT NULL,
	"admitted" bigint NOT NULL,
	CONSTRAINT "agent_admissions_agent_id_slot_pk" PRIMARY KEY("agent_id","slot")
);
--> statement-breakpoint
CREATE TABLE "agents" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"name" text NOT NULL,
	"key_hash" text NOT NULL,
	"webhook_secret" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"revoked_at" timestamp with time zone,
	CONSTRAINT "agents_name_unique" UNIQUE("name"),
	CONSTRAINT "agents_key_hash_unique" UNIQUE("key_hash")
);
--> statement-breakpoint
CREATE TABLE "audit_events" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"plan_id" uuid,
	"type" text NOT NULL,
	"actor" text NOT NULL,
	"data" text NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"prev_hash" text NOT NULL,
	"hash" text NOT NULL,
	"xid" "xid8" DEFAULT pg_current_xact_id()
);
--> statement-breakpoint
CREATE TABLE "audit_pruned" (
	"id" bigint PRIMARY KEY NOT NULL,
	"plan_id" uuid NOT NULL,
	"xid" "xid8" NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"prev_hash" text NOT NULL,
	"hash" text NOT NULL,
	"purge_id" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "audit_seal_signatures" (
	"seq" bigint PRIMARY KEY NOT NULL,
	"statement" text NOT NULL,
	"kid" text NOT NULL,
	"signature" text NOT NULL,
	"signed_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "audit_seals" (
	"seq" bigint PRIMARY KEY NOT NULL,
	"prev_hash" text NOT NULL,
	"xid_from" "xid8" NOT NULL,
	"xid_to" "xid8" NOT NULL,
	"events" integer NOT NULL,
	"events_total" bigint NOT NULL,
	"hash" text NOT NULL,
	"sealed_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "batches" (
	"id" uuid PRIMARY KEY NOT NULL,
	"reviewer" text NOT NULL,
	"via" text NOT NULL,
	"likeness" text NOT NULL,
	"plans" text NOT NULL,
	"more" integer NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "decisions" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"plan_id" uuid NOT NULL,
	"plan_hash" text NOT NULL,
	"user_id" text NOT NULL,
	"via" "decision_via" NOT NULL,
	"verdict" "verdict" NOT NULL,
	"reason" text,
	"recheck_failed" text,
	"decided_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"for_user" text
);
--> statement-breakpoint
CREATE TABLE "delegations" (
	"id" uuid PRIMARY KEY NOT NULL,
	"delegator" text NOT NULL,
	"delegate" text NOT NULL,
	"until" timestamp with time zone NOT NULL,
	"targets" text,
	"created_by" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"ended_at" timestamp with time zone,
	"ended_by" text
);
--> statement-breakpoint
CREATE TABLE "executor_presence" (
	"executor" text PRIMARY KEY NOT NULL,
	"last_seen_at" timestamp with time zone,
	"absence_noticed_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "login_links" (
	"token_hash" text PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"name" text,
	"via" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"used_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "metrics_rollup" (
	"metric" text NOT NULL,
	"label" text NOT NULL,
	"bucket" smallint NOT NULL,
	"count" bigint NOT NULL,
	"sum" double precision NOT NULL,
	CONSTRAINT "metrics_rollup_metric_label_bucket_pk" PRIMARY KEY("metric","label","bucket")
);
--> statement-breakpoint
CREATE TABLE "metrics_rollup_state" (
	"id" smallint PRIMARY KEY DEFAULT 1 NOT NULL,
	"through_xid" "xid8" NOT NULL,
	"buckets" text NOT NULL,
	CONSTRAINT "metrics_rollup_state_one_row" CHECK ("metrics_rollup_state"."id" = 1)
);
--> statement-breakpoint
CREATE TABLE "outbox" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"plan_id" uuid,
	"kind" text NOT NULL,
	"lane" text NOT NULL,
	"priority" smallint DEFAULT 1 NOT NULL,
	"payload" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"available_at" timestamp with time zone DEFAULT now() NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"last_error" text,
	"delivered_at" timestamp with time zone,
	"dead_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "outbox_lanes" (
	"lane" text PRIMARY KEY NOT NULL,
	"leased_by" text,
	"leased_until" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "pause" (
	"id" smallint PRIMARY KEY DEFAULT 1 NOT NULL,
	"reason" text NOT NULL,
	"paused_by" text NOT NULL,
	"via" text NOT NULL,
	"since" timestamp with time zone NOT NULL,
	CONSTRAINT "pause_one_row" CHECK ("pause"."id" = 1)
);
--> statement-breakpoint
CREATE TABLE "people" (
	"user_id" text PRIMARY KEY NOT NULL,
	"display_name" text,
	"fetched_at" timestamp with time zone,
	"next_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "plan_reminders" (
	"plan_id" uuid NOT NULL,
	"seconds_before" integer NOT NULL,
	"sent_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "plans" (
	"id" uuid PRIMARY KEY NOT NULL,
	"agent_id" uuid NOT NULL,
	"hash" text NOT NULL,
	"document" text NOT NULL,
	"preview" text NOT NULL,
	"status" "plan_status" DEFAULT 'pending' NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"idempotency_key" text,
	"request_digest" text NOT NULL,
	"reject_reason" text,
	"callback_url" text,
	"grant" text,
	"grant_expires_at" timestamp with time zone,
	"claim_token" text,
	"lease_expires_at" timestamp with time zone,
	"claims" integer DEFAULT 0 NOT NULL,
	"outcome" text,
	"supersedes" uuid,
	"superseded_by" uuid,
	"undoes" uuid,
	"undone_by" uuid,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "purges" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"at" timestamp with time zone DEFAULT now() NOT NULL,
	"by_role" text NOT NULL,
	"reason" text NOT NULL,
	"before" timestamp with time zone NOT NULL,
	"plans" integer NOT NULL,
	"decisions" integer NOT NULL,
	"outbox" integer NOT NULL,
	"audit_events" integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "refusal_counts" (
	"code" text PRIMARY KEY NOT NULL,
	"count" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "slack_channel_slots" (
	"channel" text PRIMARY KEY NOT NULL,
	"next_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "slack_messages" (
	"plan_id" uuid PRIMARY KEY NOT NULL,
	"channel" text NOT NULL,
	"ts" text NOT NULL,
	"posted_at" timestamp with time zone DEFAULT now() NOT NULL,
	"digest" boolean DEFAULT false NOT NULL,
	"thread_ts" text
);
--> statement-breakpoint
CREATE TABLE "target_watches" (
	"target" text NOT NULL,
	"path" text NOT NULL,
	"next_at" timestamp with time zone NOT NULL,
	"leased_by" text,
	"leased_until" timestamp with time zone,
	"checked_at" timestamp with time zone,
	"failed_since" timestamp with time zone,
	"last_error" text,
	CONSTRAINT "target_watches_target_path_pk" PRIMARY KEY("target","path")
);
--> statement-breakpoint
CREATE TABLE "watched_actions" (
	"plan_id" uuid NOT NULL,
	"action_index" smallint NOT NULL,
	"target" text NOT NULL,
	"path" text NOT NULL,
	CONSTRAINT "watched_actions_plan_id_action_index_pk" PRIMARY KEY("plan_id","action_index")
);
--> statement-breakpoint
CREATE TABLE "web_sessions" (
	"id_hash" text PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"name" text,
	"csrf_token" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"ended_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "decisions" ADD CONSTRAINT "decisions_plan_id_plans_id_fk" FOREIGN KEY ("plan_id") REFERENCES "public"."plans"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "plan_reminders" ADD CONSTRAINT "plan_reminders_plan_id_plans_id_fk" FOREIGN KEY ("plan_id") REFERENCES "public"."plans"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "plans" ADD CONSTRAINT "plans_agent_id_agents_id_fk" FOREIGN KEY ("agent_id") REFERENCES "public"."agents"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "slack_messages" ADD CONSTRAINT "slack_messages_plan_id_plans_id_fk" FOREIGN KEY ("plan_id") REFERENCES "public"."plans"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "audit_events_plan" ON "audit_events" USING btree ("plan_id","id");--> statement-breakpoint
CREATE INDEX "audit_events_xid" ON "audit_events" USING btree ("xid");--> statement-breakpoint
CREATE UNIQUE INDEX "audit_events_one_successor" ON "audit_events" USING btree ("prev_hash") WHERE xid IS NOT NULL;--> statement-breakpoint
CREATE INDEX "audit_pruned_xid" ON "audit_pruned" USING btree ("xid");--> statement-breakpoint
CREATE INDEX "audit_pruned_plan" ON "audit_pruned" USING btree ("plan_id","id");--> statement-breakpoint
CREATE INDEX "batches_expires_at" ON "batches" USING btree ("expires_at");--> statement-breakpoint
CREATE UNIQUE INDEX "decisions_one_vote_per_person" ON "decisions" USING btree ("plan_id","user_id","verdict");--> statement-breakpoint
CREATE INDEX "delegations_delegate_open" ON "delegations" USING btree ("delegate","until") WHERE ended_at IS NULL;--> statement-breakpoint
CREATE INDEX "delegations_delegator_open" ON "delegations" USING btree ("delegator","until") WHERE ended_at IS NULL;--> statement-breakpoint
CREATE INDEX "outbox_lane_order" ON "outbox" USING btree ("lane","priority","id","available_at") WHERE delivered_at IS NULL AND dead_at IS NULL;--> statement-breakpoint
CREATE INDEX "outbox_undelivered_plan_kind" ON "outbox" USING btree ("plan_id","kind","id") WHERE delivered_at IS NULL AND dead_at IS NULL;--> statement-breakpoint
CREATE INDEX "outbox_dead_plan" ON "outbox" USING btree ("plan_id","id") WHERE dead_at IS NOT NULL;--> statement-breakpoint
CREATE INDEX "outbox_delivered_at" ON "outbox" USING btree ("delivered_at") WHERE delivered_at IS NOT NULL;--> statement-breakpoint
CREATE INDEX "people_display_name" ON "people" USING btree (lower("display_name"));--> statement-breakpoint
CREATE UNIQUE INDEX "plan_reminders_once" ON "plan_reminders" USING btree ("plan_id","seconds_before");--> statement-breakpoint
CREATE UNIQUE INDEX "plans_agent_idempotency_key" ON "plans" USING btree ("agent_id","idempotency_key");--> statement-breakpoint
CREATE INDEX "plans_status_expires_at" ON "plans" USING btree ("status","expires_at");--> statement-breakpoint
CREATE INDEX "plans_agent_created_at" ON "plans" USING btree ("agent_id","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "plans_claim_token" ON "plans" USING btree ("claim_token");--> statement-breakpoint
CREATE INDEX "plans_created_at" ON "plans" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "plans_status_created_at" ON "plans" USING btree ("status","created_at");--> statement-breakpoint
CREATE INDEX "plans_pending_expiry" ON "plans" USING btree ("expires_at","id") WHERE status = 'pending';--> statement-breakpoint
CREATE INDEX "plans_agent_open" ON "plans" USING btree ("agent_id","status","expires_at") WHERE status IN ('pending', 'approved');--> statement-breakpoint
CREATE INDEX "plans_final_updated_at" ON "plans" USING btree ("updated_at") WHERE status NOT IN ('pending', 'approved', 'executing');--> statement-breakpoint
CREATE INDEX "plans_undoes" ON "plans" USING btree ("undoes") WHERE undoes IS NOT NULL;--> statement-breakpoint
CREATE INDEX "slack_messages_digest" ON "slack_messages" USING btree ("channel","ts") WHERE digest;--> statement-breakpoint
CREATE INDEX "target_watches_next_at" ON "target_watches" USING btree ("next_at");--> statement-breakpoint
CREATE INDEX "watched_actions_target_path" ON "watched_actions" USING btree ("target","path");