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
CREATE TABLE "refusal_counts" (
	"code" text PRIMARY KEY NOT NULL,
	"count" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE INDEX "outbox_delivered_at" ON "outbox" USING btree ("delivered_at") WHERE delivered_at IS NOT NULL;--> statement-breakpoint
CREATE INDEX "plans_final_updated_at" ON "plans" USING btree ("updated_at") WHERE status NOT IN ('pending', 'approved', 'executing');--> statement-breakpoint
-- Retention (issue 16): the purge also takes the final statuses added since 0008 (superseded,
-- revoked), and finds its plans through plans_final_updated_at (its predicate, open statuses
-- excluded, is repeated so the planner may use it; the final ones are still named), so the
-- sweeper's small batches (a cutoff a batch after the oldest final plan) read only that batch.
-- Everything else is 0008's: audit events are kept, and the call is recorded in purges.
CREATE OR REPLACE FUNCTION countersign_purge_plans(purge_before timestamptz, purge_reason text) RETURNS integer
  SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  doomed uuid[];
  n_plans integer;
  n_decisions integer;
  n_outbox integer;
BEGIN
  IF purge_before IS NULL OR purge_before > now() THEN
    RAISE EXCEPTION 'countersign_purge_plans: the cutoff must be a moment in the past, got %', coalesce(purge_before::text, 'NULL')
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF purge_reason IS NULL OR btrim(purge_reason) = '' THEN
    RAISE EXCEPTION 'countersign_purge_plans: a reason is required (it is kept in purges)' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- Final statuses named, not "not open": a status added later is kept until it is listed here.
  SELECT coalesce(array_agg(id), '{}') INTO doomed FROM (
    SELECT id FROM plans
     WHERE status IN ('rejected', 'expired', 'cancelled', 'applied', 'failed', 'stale', 'superseded', 'revoked')
       AND status NOT IN ('pending', 'approved', 'executing') AND updated_at < purge_before
       FOR UPDATE
  ) AS final_plans;
  PERFORM set_config('countersign.purge', 'on', true);
  DELETE FROM decisions WHERE plan_id = ANY (doomed);
  GET DIAGNOSTICS n_decisions = ROW_COUNT;
  DELETE FROM slack_messages WHERE plan_id = ANY (doomed);
  DELETE FROM plan_reminders WHERE plan_id = ANY (doomed);
  DELETE FROM outbox WHERE plan_id = ANY (doomed);
  GET DIAGNOSTICS n_outbox = ROW_COUNT;
  DELETE FROM plans WHERE id = ANY (doomed);
  GET DIAGNOSTICS n_plans = ROW_COUNT;
  PERFORM set_config('countersign.purge', 'off', true);
  INSERT INTO purges (by_role, reason, before, plans, decisions, outbox)
  VALUES (session_user, purge_reason, purge_before, n_plans, n_decisions, n_outbox);
  RETURN n_plans;
END;
$$ LANGUAGE plpgsql;
--> statement-breakpoint
REVOKE ALL ON FUNCTION countersign_purge_plans(timestamptz, text) FROM PUBLIC;
