-- Indexes for the reads that grew with stored history (issue 13): the outbox lease and its
-- "earlier undelivered row" probe cover only undelivered rows, the plan page's dead letters only
-- dead rows, and the browser list reads plans newest first from an index instead of sorting all.
-- Not CONCURRENTLY: migrations run in one transaction. On 1 M plans and 4 M outbox rows the five
-- builds took 5 s (PostgreSQL 15, 2 cores, load 4.9), during which plan writes wait.
CREATE INDEX "outbox_undelivered" ON "outbox" USING btree ("id") WHERE delivered_at IS NULL AND dead_at IS NULL;--> statement-breakpoint
CREATE INDEX "outbox_undelivered_plan_kind" ON "outbox" USING btree ("plan_id","kind","id") WHERE delivered_at IS NULL AND dead_at IS NULL;--> statement-breakpoint
CREATE INDEX "outbox_dead_plan" ON "outbox" USING btree ("plan_id","id") WHERE dead_at IS NOT NULL;--> statement-breakpoint
CREATE INDEX "plans_created_at" ON "plans" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "plans_status_created_at" ON "plans" USING btree ("status","created_at");