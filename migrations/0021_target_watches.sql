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
ALTER TABLE "decisions" ADD COLUMN "recheck_failed" text;--> statement-breakpoint
CREATE INDEX "target_watches_next_at" ON "target_watches" USING btree ("next_at");--> statement-breakpoint
CREATE INDEX "watched_actions_target_path" ON "watched_actions" USING btree ("target","path");