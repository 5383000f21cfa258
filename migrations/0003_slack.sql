CREATE TABLE "slack_channel_slots" (
	"channel" text PRIMARY KEY NOT NULL,
	"next_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "slack_messages" (
	"plan_id" uuid PRIMARY KEY NOT NULL,
	"channel" text NOT NULL,
	"ts" text NOT NULL,
	"posted_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "slack_messages" ADD CONSTRAINT "slack_messages_plan_id_plans_id_fk" FOREIGN KEY ("plan_id") REFERENCES "public"."plans"("id") ON DELETE no action ON UPDATE no action;