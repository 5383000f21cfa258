-- Issue 16 review (doors): the guards took part of their meaning from the caller's search_path.
-- * countersign_purge_plans() runs as its owner with `search_path = public, pg_temp`. Functions and
--   operators of different argument types compete on equal terms whatever their schema, so an
--   exact-type match in public beats pg_catalog's generic one: a role with EXECUTE that may CREATE
--   in public (every role before PostgreSQL 15) could add public.cardinality(uuid[]) and have it run
--   as the owner, where the purge flag opens every guard (reproduced: an approved plan's decisions
--   and audit events deleted).
-- * The trigger functions had no search_path of their own, so they ran with the caller's: a role that
--   may UPDATE plans and create an operator in a schema of its own could put `-(jsonb, text[])` first
--   (`SET search_path = evil, pg_catalog`) and the immutability check found no change (reproduced: an
--   approved plan's document changed).
-- Every guard, the admission counter and the purge now run with `search_path = pg_catalog, pg_temp`:
-- functions and operators resolve in the catalog only (pg_temp is never searched for them), and each
-- table is named with its schema, so a temporary table of the same name is not read either. Bodies are
-- otherwise those of 0023, 0025 and 0027; CREATE OR REPLACE keeps the triggers bound and the purge's
-- grants. test/integration/db-guards-search-path.test.ts lists every SECURITY DEFINER and trigger
-- function from the catalog and fails on one without this setting.
CREATE OR REPLACE FUNCTION countersign_purge_plans(purge_before timestamptz, purge_reason text) RETURNS integer
  SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
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
      coalesce((SELECT through_xid FROM public.metrics_rollup_state WHERE id = 1), '0'::xid8),
      coalesce(CASE WHEN EXISTS (SELECT 1 FROM public.audit_seal_signatures)
        THEN (SELECT s.xid_to FROM public.audit_seals s JOIN public.audit_seal_signatures g ON g.seq = s.seq ORDER BY s.seq DESC LIMIT 1)
        ELSE (SELECT xid_to FROM public.audit_seals ORDER BY seq DESC LIMIT 1) END, '0'::xid8))
    INTO sealed_to;
  -- Final statuses named, not "not open": a status added later is kept until it is listed here.
  SELECT coalesce(array_agg(id), '{}') INTO locked FROM (
    SELECT id FROM public.plans
     WHERE status IN ('rejected', 'expired', 'cancelled', 'applied', 'failed', 'stale', 'superseded', 'revoked')
       AND status NOT IN ('pending', 'approved', 'executing') AND updated_at < purge_before
       FOR UPDATE
  ) AS final_plans;
  -- A statement of its own after the lock: its snapshot sees events committed by a transaction the lock waited for.
  SELECT coalesce(array_agg(p), '{}') INTO doomed FROM unnest(locked) AS p
   WHERE NOT EXISTS (SELECT 1 FROM public.audit_events e WHERE e.plan_id = p AND e.xid >= sealed_to);
  IF cardinality(doomed) = 0 THEN
    RETURN 0;
  END IF;
  this_purge := nextval(pg_get_serial_sequence('public.purges', 'id'));
  PERFORM set_config('countersign.purge', 'on', true);
  DELETE FROM public.decisions WHERE plan_id = ANY (doomed);
  GET DIAGNOSTICS n_decisions = ROW_COUNT;
  DELETE FROM public.slack_messages WHERE plan_id = ANY (doomed);
  DELETE FROM public.plan_reminders WHERE plan_id = ANY (doomed);
  DELETE FROM public.outbox WHERE plan_id = ANY (doomed);
  GET DIAGNOSTICS n_outbox = ROW_COUNT;
  WITH gone AS (
    DELETE FROM public.audit_events WHERE plan_id = ANY (doomed) AND xid IS NOT NULL
    RETURNING id, plan_id, xid, at, prev_hash, hash)
  INSERT INTO public.audit_pruned (id, plan_id, xid, at, prev_hash, hash, purge_id)
  SELECT id, plan_id, xid, at, prev_hash, hash, this_purge FROM gone;
  GET DIAGNOSTICS n_events = ROW_COUNT;
  DELETE FROM public.plans WHERE id = ANY (doomed);
  GET DIAGNOSTICS n_plans = ROW_COUNT;
  PERFORM set_config('countersign.purge', 'off', true);
  INSERT INTO public.purges (id, by_role, reason, before, plans, decisions, outbox, audit_events)
  VALUES (this_purge, session_user, purge_reason, purge_before, n_plans, n_decisions, n_outbox, n_events);
  RETURN n_plans;
END;
$$ LANGUAGE plpgsql;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION countersign_append_only() RETURNS trigger
  SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF TG_OP = 'DELETE' AND TG_ARGV[0] = 'purgeable' AND public.countersign_purge_open(TG_TABLE_NAME, TG_OP) THEN
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
CREATE OR REPLACE FUNCTION countersign_plans_immutable() RETURNS trigger
  SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  mutable CONSTANT text[] := ARRAY['status', 'updated_at', 'reject_reason', 'grant', 'grant_expires_at', 'claim_token', 'lease_expires_at', 'claims', 'outcome', 'superseded_by'];
  changed text;
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    RAISE EXCEPTION 'plans are kept: TRUNCATE refused (final plans leave only through countersign_purge_plans())' USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  IF TG_OP = 'DELETE' THEN
    IF public.countersign_purge_open(TG_TABLE_NAME, TG_OP) THEN
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
--> statement-breakpoint
CREATE OR REPLACE FUNCTION countersign_audit_pruned_guard() RETURNS trigger
  SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF TG_OP = 'INSERT' AND public.countersign_purge_open(TG_TABLE_NAME, TG_OP) THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'audit_pruned is written only by countersign_purge_plans() and never changed: % refused', TG_OP
    USING ERRCODE = 'integrity_constraint_violation';
END;
$$ LANGUAGE plpgsql;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION countersign_count_admission() RETURNS trigger
  SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  INSERT INTO public.agent_admissions (agent_id, slot, admitted)
    VALUES (NEW.agent_id, coalesce(nullif(current_setting('countersign.admit_slot', true), '')::smallint, 8), 1)
    ON CONFLICT (agent_id, slot) DO UPDATE SET admitted = agent_admissions.admitted + 1;
  RETURN NULL;
END;
$$ LANGUAGE plpgsql;
