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
ALTER TABLE "purges" ADD COLUMN "audit_events" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX "audit_pruned_xid" ON "audit_pruned" USING btree ("xid");--> statement-breakpoint
CREATE INDEX "audit_pruned_plan" ON "audit_pruned" USING btree ("plan_id","id");--> statement-breakpoint
-- Retention prunes audit events (issue 16). A pruned event leaves one line in audit_pruned (id,
-- plan, transaction, time, both hashes: what `audit verify` needs to rebuild every seal without
-- its content); the line is written only by countersign_purge_plans(), in the transaction that
-- deletes the event, and never changes. Like 0008's guards, this stops accidents and application
-- bugs, not someone who may set countersign.purge by hand: published signed seals are for them.
CREATE FUNCTION countersign_audit_pruned_guard() RETURNS trigger AS $$
BEGIN
  IF TG_OP = 'INSERT' AND current_setting('countersign.purge', true) = 'on' THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'audit_pruned is written only by countersign_purge_plans() and never changed: % refused', TG_OP
    USING ERRCODE = 'integrity_constraint_violation';
END;
$$ LANGUAGE plpgsql;
--> statement-breakpoint
CREATE TRIGGER audit_pruned_guard BEFORE INSERT OR UPDATE OR DELETE ON audit_pruned FOR EACH ROW EXECUTE FUNCTION countersign_audit_pruned_guard();
--> statement-breakpoint
CREATE TRIGGER audit_pruned_no_truncate BEFORE TRUNCATE ON audit_pruned FOR EACH STATEMENT EXECUTE FUNCTION countersign_append_only();
--> statement-breakpoint
-- Audit events now leave with their plan, through the purge (as decisions do); never otherwise.
DROP TRIGGER audit_events_append_only ON audit_events;
--> statement-breakpoint
CREATE TRIGGER audit_events_append_only BEFORE UPDATE OR DELETE ON audit_events FOR EACH ROW EXECUTE FUNCTION countersign_append_only('purgeable');
--> statement-breakpoint
-- 0020's purge, now also deleting the purged plans' audit events behind a checkpoint. A plan is
-- taken only when every event of its chain is below `sealed_to`: sealed, summed by the metrics
-- rollup (so the counters keep counting it), and, once any seal has been signed, under a signed
-- seal (so a published seal vouched for the pruned hashes before they left). A plan whose newer
-- events are not there yet waits for a later call. Legacy events (xid NULL) stay: they are links
-- of the one legacy chain. A call that takes nothing writes no purges row.
CREATE OR REPLACE FUNCTION countersign_purge_plans(purge_before timestamptz, purge_reason text) RETURNS integer
  SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  sealed_to xid8;
  locked uuid[];
  doomed uuid[];
  this_purge bigint;
  n_plans integer;
  n_decisions integer;
  n_outbox integer;
  n_events integer;
BEGIN
  IF purge_before IS NULL OR purge_before > now() THEN
    RAISE EXCEPTION 'countersign_purge_plans: the cutoff must be a moment in the past, got %', coalesce(purge_before::text, 'NULL')
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF purge_reason IS NULL OR btrim(purge_reason) = '' THEN
    RAISE EXCEPTION 'countersign_purge_plans: a reason is required (it is kept in purges)' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT least(
      coalesce((SELECT through_xid FROM metrics_rollup_state WHERE id = 1), '0'::xid8),
      coalesce(CASE WHEN EXISTS (SELECT 1 FROM audit_seal_signatures)
        THEN (SELECT s.xid_to FROM audit_seals s JOIN audit_seal_signatures g ON g.seq = s.seq ORDER BY s.seq DESC LIMIT 1)
        ELSE (SELECT xid_to FROM audit_seals ORDER BY seq DESC LIMIT 1) END, '0'::xid8))
    INTO sealed_to;
  -- Final statuses named, not "not open": a status added later is kept until it is listed here.
  SELECT coalesce(array_agg(id), '{}') INTO locked FROM (
    SELECT id FROM plans
     WHERE status IN ('rejected', 'expired', 'cancelled', 'applied', 'failed', 'stale', 'superseded', 'revoked')
       AND status NOT IN ('pending', 'approved', 'executing') AND updated_at < purge_before
       FOR UPDATE
  ) AS final_plans;
  -- A statement of its own after the lock: its snapshot sees events committed by a transaction the lock waited for.
  SELECT coalesce(array_agg(p), '{}') INTO doomed FROM unnest(locked) AS p
   WHERE NOT EXISTS (SELECT 1 FROM audit_events e WHERE e.plan_id = p AND e.xid >= sealed_to);
  IF cardinality(doomed) = 0 THEN
    RETURN 0;
  END IF;
  this_purge := nextval(pg_get_serial_sequence('purges', 'id'));
  PERFORM set_config('countersign.purge', 'on', true);
  DELETE FROM decisions WHERE plan_id = ANY (doomed);
  GET DIAGNOSTICS n_decisions = ROW_COUNT;
  DELETE FROM slack_messages WHERE plan_id = ANY (doomed);
  DELETE FROM plan_reminders WHERE plan_id = ANY (doomed);
  DELETE FROM outbox WHERE plan_id = ANY (doomed);
  GET DIAGNOSTICS n_outbox = ROW_COUNT;
  WITH gone AS (
    DELETE FROM audit_events WHERE plan_id = ANY (doomed) AND xid IS NOT NULL
    RETURNING id, plan_id, xid, at, prev_hash, hash)
  INSERT INTO audit_pruned (id, plan_id, xid, at, prev_hash, hash, purge_id)
  SELECT id, plan_id, xid, at, prev_hash, hash, this_purge FROM gone;
  GET DIAGNOSTICS n_events = ROW_COUNT;
  DELETE FROM plans WHERE id = ANY (doomed);
  GET DIAGNOSTICS n_plans = ROW_COUNT;
  PERFORM set_config('countersign.purge', 'off', true);
  INSERT INTO purges (id, by_role, reason, before, plans, decisions, outbox, audit_events)
  VALUES (this_purge, session_user, purge_reason, purge_before, n_plans, n_decisions, n_outbox, n_events);
  RETURN n_plans;
END;
$$ LANGUAGE plpgsql;
--> statement-breakpoint
REVOKE ALL ON FUNCTION countersign_purge_plans(timestamptz, text) FROM PUBLIC;
