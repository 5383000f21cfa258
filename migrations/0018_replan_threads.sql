ALTER TABLE "slack_messages" ADD COLUMN "thread_ts" text;--> statement-breakpoint
-- Re-plan (issue 15): a stale plan stays stale when a new version replaces it, but gains
-- superseded_by; a pending or approved one gains it with its move to superseded. So
-- superseded_by joins the lifecycle columns that may move (0008's list otherwise unchanged).
-- supersedes is set when the plan is stored and never moves.
CREATE OR REPLACE FUNCTION countersign_plans_immutable() RETURNS trigger AS $$
DECLARE
  mutable CONSTANT text[] := ARRAY['status', 'updated_at', 'reject_reason', 'grant', 'grant_expires_at', 'claim_token', 'lease_expires_at', 'claims', 'outcome', 'superseded_by'];
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
  IF OLD.superseded_by IS NOT NULL AND NEW.superseded_by IS DISTINCT FROM OLD.superseded_by THEN
    RAISE EXCEPTION 'plan %: it was superseded by %, which is fixed', OLD.id, OLD.superseded_by USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END;
$$ LANGUAGE plpgsql;
