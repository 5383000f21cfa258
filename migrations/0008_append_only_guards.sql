CREATE TABLE "purges" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"at" timestamp with time zone DEFAULT now() NOT NULL,
	"by_role" text NOT NULL,
	"reason" text NOT NULL,
	"before" timestamp with time zone NOT NULL,
	"plans" integer NOT NULL,
	"decisions" integer NOT NULL,
	"outbox" integer NOT NULL
);
--> statement-breakpoint
-- Guards against accidents and application bugs, not against a malicious DBA: anyone who may
-- ALTER these tables (or set countersign.purge by hand) can get past them. Tampering by such a
-- person is what `countersign audit verify` and the published audit heads are for.
--
-- Decisions, audit events and purge records are written once and never changed. Decisions leave
-- only with their plan, through countersign_purge_plans(); audit events and purges never do.
CREATE FUNCTION countersign_append_only() RETURNS trigger AS $$
BEGIN
  IF TG_OP = 'DELETE' AND TG_ARGV[0] = 'purgeable' AND current_setting('countersign.purge', true) = 'on' THEN
    RETURN OLD;
  END IF;
  IF TG_ARGV[0] = 'purgeable' THEN
    RAISE EXCEPTION '% is append-only: % refused (rows leave only with their plan, through countersign_purge_plans())', TG_TABLE_NAME, TG_OP
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP USING ERRCODE = 'integrity_constraint_violation';
END;
$$ LANGUAGE plpgsql;
--> statement-breakpoint
CREATE TRIGGER decisions_append_only BEFORE UPDATE OR DELETE ON decisions FOR EACH ROW EXECUTE FUNCTION countersign_append_only('purgeable');
--> statement-breakpoint
CREATE TRIGGER decisions_no_truncate BEFORE TRUNCATE ON decisions FOR EACH STATEMENT EXECUTE FUNCTION countersign_append_only();
--> statement-breakpoint
CREATE TRIGGER audit_events_append_only BEFORE UPDATE OR DELETE ON audit_events FOR EACH ROW EXECUTE FUNCTION countersign_append_only();
--> statement-breakpoint
CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events FOR EACH STATEMENT EXECUTE FUNCTION countersign_append_only();
--> statement-breakpoint
CREATE TRIGGER purges_append_only BEFORE UPDATE OR DELETE ON purges FOR EACH ROW EXECUTE FUNCTION countersign_append_only();
--> statement-breakpoint
CREATE TRIGGER purges_no_truncate BEFORE TRUNCATE ON purges FOR EACH STATEMENT EXECUTE FUNCTION countersign_append_only();
--> statement-breakpoint
-- A stored plan never changes: what was hashed, previewed and decided on is fixed. This names
-- the lifecycle columns that MAY move (every UPDATE of plans in src/service sets only these);
-- any other column, including one added later, is immutable until it is added to the list.
-- A grant, once issued, is fixed too. Plans are deleted only by countersign_purge_plans().
-- (The executor still recomputes the hash, in case all of this is bypassed.)
CREATE OR REPLACE FUNCTION countersign_plans_immutable() RETURNS trigger AS $$
DECLARE
  mutable CONSTANT text[] := ARRAY['status', 'updated_at', 'reject_reason', 'grant', 'grant_expires_at', 'claim_token', 'lease_expires_at', 'claims', 'outcome'];
  changed text;
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    RAISE EXCEPTION 'plans are kept: TRUNCATE refused (final plans leave only through countersign_purge_plans())' USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  IF TG_OP = 'DELETE' THEN
    IF current_setting('countersign.purge', true) = 'on' THEN
      RETURN OLD;
    END IF;
    RAISE EXCEPTION 'plans are kept: DELETE of plan % refused (final plans leave only through countersign_purge_plans())', OLD.id
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  SELECT string_agg(n.key, ', ' ORDER BY n.key) INTO changed
    FROM jsonb_each(to_jsonb(NEW) - mutable) AS n
   WHERE n.value IS DISTINCT FROM (to_jsonb(OLD) - mutable) -> n.key;
  IF changed IS NOT NULL THEN
    RAISE EXCEPTION 'plan % is immutable: a revision is a new plan (refused a change to %; only % may change)', OLD.id, changed, array_to_string(mutable, ', ')
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  IF OLD."grant" IS NOT NULL AND (NEW."grant" IS DISTINCT FROM OLD."grant" OR NEW.grant_expires_at IS DISTINCT FROM OLD.grant_expires_at) THEN
    RAISE EXCEPTION 'plan %: its grant is fixed once issued', OLD.id USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END;
$$ LANGUAGE plpgsql;
--> statement-breakpoint
DROP TRIGGER plans_immutable ON plans;
--> statement-breakpoint
CREATE TRIGGER plans_immutable BEFORE UPDATE OR DELETE ON plans FOR EACH ROW EXECUTE FUNCTION countersign_plans_immutable();
--> statement-breakpoint
CREATE TRIGGER plans_no_truncate BEFORE TRUNCATE ON plans FOR EACH STATEMENT EXECUTE FUNCTION countersign_plans_immutable();
--> statement-breakpoint
-- The one way to delete: final plans last changed before the cutoff, with their decisions,
-- Slack message refs, reminders and outbox rows, recorded in purges. Audit events are kept:
-- the hash chain runs through every plan's events, and `audit verify` walks it from the start.
-- The setting is transaction-local and switched off again before returning, so it opens the
-- guards for this function's own deletes only.
CREATE FUNCTION countersign_purge_plans(purge_before timestamptz, purge_reason text) RETURNS integer
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
     WHERE status IN ('rejected', 'expired', 'cancelled', 'applied', 'failed', 'stale') AND updated_at < purge_before
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
