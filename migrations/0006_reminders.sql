CREATE TABLE "plan_reminders" (
	"plan_id" uuid NOT NULL,
	"seconds_before" integer NOT NULL,
	"sent_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "plan_reminders" ADD CONSTRAINT "plan_reminders_plan_id_plans_id_fk" FOREIGN KEY ("plan_id") REFERENCES "public"."plans"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "plan_reminders_once" ON "plan_reminders" USING btree ("plan_id","seconds_before");