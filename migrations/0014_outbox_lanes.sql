-- Outbox lanes (issue 14): each row waits in a lane (`slack:<channel>`, `webhook:<agent>`, or its
-- kind) that drains on its own, so a slow or rate-limited sink never delays another. A worker
-- takes a whole lane by a lease row in outbox_lanes (src/service/outbox-lease.ts).
CREATE TABLE "outbox_lanes" (
	"lane" text PRIMARY KEY NOT NULL,
	"leased_by" text,
	"leased_until" timestamp with time zone NOT NULL
);
--> statement-breakpoint
-- A constant default adds the column without rewriting the table (4 M delivered rows in the
-- bench history); rows delivered before lanes keep "" and are never read by lane again.
ALTER TABLE "outbox" ADD COLUMN "lane" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "outbox" ADD COLUMN "priority" smallint DEFAULT 1 NOT NULL;--> statement-breakpoint
-- Rows still to deliver, and dead ones (shown per lane), get their lane from kind and plan. A
-- review channel comes from the config, which SQL cannot see: a Slack row of a plan already
-- posted takes the channel it was posted in, one whose preview is still queued the lane "slack"
-- (drained on its own; Slack's per-channel pacing is kept by channel all the same).
UPDATE "outbox" o SET
  "lane" = CASE
    WHEN o.kind = 'webhook' THEN 'webhook:' || coalesce((SELECT a.name FROM plans p JOIN agents a ON a.id = p.agent_id WHERE p.id = o.plan_id), '')
    WHEN o.kind = 'slack' THEN coalesce('slack:' || (SELECT m.channel FROM slack_messages m WHERE m.plan_id = o.plan_id), 'slack')
    ELSE o.kind END,
  "priority" = CASE WHEN o.kind = 'slack' AND o.payload::json->>'type' = 'plan.submitted' THEN 0 ELSE 1 END
WHERE o.delivered_at IS NULL;--> statement-breakpoint
-- From here on every row names its lane when it is written.
ALTER TABLE "outbox" ALTER COLUMN "lane" DROP DEFAULT;--> statement-breakpoint
-- The lane's rows in delivery order, replacing 0012's global id order (the lease no longer walks
-- every lane's rows): also the skip scan that lists lanes with work.
DROP INDEX "outbox_undelivered_by_id";--> statement-breakpoint
CREATE INDEX "outbox_lane_order" ON "outbox" USING btree ("lane","priority","id","available_at") WHERE delivered_at IS NULL AND dead_at IS NULL;
