CREATE TYPE "public"."decision_via" AS ENUM('slack', 'web');--> statement-breakpoint
CREATE TYPE "public"."plan_status" AS ENUM('pending', 'approved', 'rejected', 'expired', 'cancelled', 'executing', 'applied', 'failed', 'stale');--> statement-breakpoint
CREATE TYPE "public"."verdict" AS ENUM('approve', 'reject');--> statement-breakpoint
CREATE TABLE "agents" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"name" text NOT NULL,
	"key_hash" text NOT NULL,
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
	"hash" text NOT NULL
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
	"decided_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "outbox" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"plan_id" uuid,
	"kind" text NOT NULL,
	"payload" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"available_at" timestamp with time zone DEFAULT now() NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"last_error" text,
	"delivered_at" timestamp with time zone,
	"dead_at" timestamp with time zone
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
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "decisions" ADD CONSTRAINT "decisions_plan_id_plans_id_fk" FOREIGN KEY ("plan_id") REFERENCES "public"."plans"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "plans" ADD CONSTRAINT "plans_agent_id_agents_id_fk" FOREIGN KEY ("agent_id") REFERENCES "public"."agents"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "audit_events_plan" ON "audit_events" USING btree ("plan_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "decisions_one_vote_per_person" ON "decisions" USING btree ("plan_id","user_id","verdict");--> statement-breakpoint
CREATE INDEX "outbox_due" ON "outbox" USING btree ("available_at") WHERE delivered_at IS NULL AND dead_at IS NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "plans_agent_idempotency_key" ON "plans" USING btree ("agent_id","idempotency_key");--> statement-breakpoint
CREATE INDEX "plans_status_expires_at" ON "plans" USING btree ("status","expires_at");--> statement-breakpoint
CREATE INDEX "plans_agent_created_at" ON "plans" USING btree ("agent_id","created_at");