-- Every guard, trigger and hand-written function of the schema, in its one and only form: the
-- tables are in 0000_baseline.sql (drizzle-kit, from src/store/schema.ts). To change a function,
-- edit it here; test/integration/store/guards-file.test.ts compares each body with the migrated
-- database, and CONTRIBUTING.md ("Migrations") says how to regenerate both files.
--
-- The guards stop accidents and application bugs, not a malicious owner: anyone who may ALTER
-- these tables, disable a trigger or call countersign_purge_plans() as its owner gets past them.
-- Tampering by such a person is what `countersign audit verify` and the published signed seals
-- are for. Each trigger function and the SECURITY DEFINER purge run with
-- `search_path = pg_catalog, pg_temp` and name tables `public.<name>`, so a function, operator or
-- temporary table the caller puts first changes nothing they check
-- (test/integration/store/db-guards-search-path.test.ts).

-- The purge flag (countersign.purge, transaction-local) opens the append-only guards only for the
-- role countersign_purge_plans() runs as: SECURITY DEFINER, so inside it current_user is its owner
-- (the role that ran the migrations and owns these tables). Any other role that sets the flag by
-- hand is refused, whatever its table privileges. The owner is found by the purge's name, schema
-- and argument type oids, not a cast a cached plan would keep. It takes exactly the argument types
-- the guards pass (TG_TABLE_NAME is a `name`), so no function added beside it is an exacter match.
-- Called only on a refused or purge path: an ordinary UPDATE of plans never gets here.
CREATE FUNCTION countersign_purge_open(guarded_table name, guarded_op text) RETURNS boolean
  SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  purger name;
BEGIN
  IF coalesce(current_setting('countersign.purge', true), '') <> 'on' THEN
    RETURN false;
  END IF;
  SELECT pg_get_userbyid(p.proowner) INTO purger
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
   WHERE n.nspname = 'public' AND p.proname = 'countersign_purge_plans' AND p.proargtypes = '1184 25'::oidvector;
  IF purger IS NULL OR purger <> current_user THEN
    RAISE EXCEPTION '%: % refused: countersign.purge opens the append-only guards only inside countersign_purge_plans(), which runs as its owner (%), not for % setting it by hand; call the function instead',
      guarded_table, guarded_op, coalesce(purger::text, 'not installed'), current_user
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  RETURN true;
END;
$$ LANGUAGE plpgsql;
--> statement-breakpoint

-- Decisions, audit events, seals, their signatures and purge records are written once and never
-- changed. Rows of the tables whose triggers pass 'purgeable' (decisions, audit events) leave only
-- with their plan, through countersign_purge_plans().
CREATE FUNCTION countersign_append_only() RETURNS trigger
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

-- A stored plan never changes: what was hashed, previewed and decided on is fixed. `mutable` names
-- the lifecycle columns that may move (every UPDATE of plans in src/service sets only these); any
-- other column, one added later included, is fixed until it is added to the list (here and in
-- countersign_plans_document_fixed). A grant, once issued, is fixed, and so are a superseding plan and
-- the undo that took a plan back.
-- Plans leave only through countersign_purge_plans(). (The executor still recomputes the hash, in
-- case all of this is bypassed.) It runs under the row lock at every decision, claim and report,
-- so each row is made jsonb once, and without the document and the preview, which may be large
-- (countersign_plans_document_fixed compares those).
CREATE FUNCTION countersign_plans_immutable() RETURNS trigger
  SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  mutable CONSTANT text[] := ARRAY['status', 'updated_at', 'reject_reason', 'grant', 'grant_expires_at', 'claim_token', 'lease_expires_at', 'claims', 'outcome', 'superseded_by', 'undone_by'];
  n public.plans;
  o public.plans;
  fixed_new jsonb;
  fixed_old jsonb;
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
  -- The document and the preview are left to plans_document_fixed, which fires only on an UPDATE
  -- that names them: here they are nulled in copies of the rows (the copies keep them as they are
  -- stored, unread), and each copy is made jsonb once. Every other column, one added later
  -- included, is fixed unless named mutable.
  n := NEW;
  o := OLD;
  n.document := NULL;
  n.preview := NULL;
  o.document := NULL;
  o.preview := NULL;
  fixed_new := to_jsonb(n) - mutable;
  fixed_old := to_jsonb(o) - mutable;
  IF fixed_new IS DISTINCT FROM fixed_old THEN
    SELECT string_agg(f.key, ', ' ORDER BY f.key) INTO changed
      FROM jsonb_each(fixed_new) AS f
     WHERE f.value IS DISTINCT FROM fixed_old -> f.key;
    RAISE EXCEPTION 'plan % is immutable: a revision is a new plan (refused a change to %; only % may change)', OLD.id, coalesce(changed, 'a fixed column'), array_to_string(mutable, ', ')
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  IF OLD."grant" IS NOT NULL AND (NEW."grant" IS DISTINCT FROM OLD."grant" OR NEW.grant_expires_at IS DISTINCT FROM OLD.grant_expires_at) THEN
    RAISE EXCEPTION 'plan %: its grant is fixed once issued', OLD.id USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  IF OLD.superseded_by IS NOT NULL AND NEW.superseded_by IS DISTINCT FROM OLD.superseded_by THEN
    RAISE EXCEPTION 'plan %: it was superseded by %, which is fixed', OLD.id, OLD.superseded_by USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  IF OLD.undone_by IS NOT NULL AND NEW.undone_by IS DISTINCT FROM OLD.undone_by THEN
    RAISE EXCEPTION 'plan %: it was undone by %, which is fixed', OLD.id, OLD.undone_by USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END;
$$ LANGUAGE plpgsql;
--> statement-breakpoint

-- The document and the preview, compared as they are, only on an UPDATE that names them (the
-- product names them in none). PostgreSQL fires an UPDATE OF trigger on the statement's SET list,
-- not on what another BEFORE trigger changes, so these two are the only BEFORE UPDATE row triggers
-- on plans (db-guards-search-path.test.ts).
CREATE FUNCTION countersign_plans_document_fixed() RETURNS trigger
  SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  -- As countersign_plans_immutable's, for the message.
  mutable CONSTANT text[] := ARRAY['status', 'updated_at', 'reject_reason', 'grant', 'grant_expires_at', 'claim_token', 'lease_expires_at', 'claims', 'outcome', 'superseded_by', 'undone_by'];
  changed text[] := ARRAY[]::text[];
BEGIN
  IF NEW.document IS DISTINCT FROM OLD.document THEN
    changed := changed || 'document'::text;
  END IF;
  IF NEW.preview IS DISTINCT FROM OLD.preview THEN
    changed := changed || 'preview'::text;
  END IF;
  IF cardinality(changed) > 0 THEN
    RAISE EXCEPTION 'plan % is immutable: a revision is a new plan (refused a change to %; only % may change)', OLD.id, array_to_string(changed, ', '), array_to_string(mutable, ', ')
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END;
$$ LANGUAGE plpgsql;
--> statement-breakpoint

-- A pruned audit event leaves one line in audit_pruned (id, plan, transaction, time, both hashes:
-- what `audit verify` needs to rebuild every seal without its content), written only by
-- countersign_purge_plans() in the transaction that deletes the event, and never changed.
CREATE FUNCTION countersign_audit_pruned_guard() RETURNS trigger
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

-- agent_admissions: how many plans each agent has ever stored, one row per admission slot (0..7,
-- the slot the submission holds, named by countersign.admit_slot; 8 without the admission guard),
-- so one agent's submissions never wait on one another's row. Kept on every INSERT into plans, so
-- it also counts plans written by hand. Copies made with triggers off
-- (session_replication_role = replica) must add their plans themselves.
CREATE FUNCTION countersign_count_admission() RETURNS trigger
  SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  INSERT INTO public.agent_admissions (agent_id, slot, admitted)
    VALUES (NEW.agent_id, coalesce(nullif(current_setting('countersign.admit_slot', true), '')::smallint, 8), 1)
    ON CONFLICT (agent_id, slot) DO UPDATE SET admitted = agent_admissions.admitted + 1;
  RETURN NULL;
END;
$$ LANGUAGE plpgsql;
--> statement-breakpoint

-- The one way to delete: final plans last changed before the cutoff, with their decisions, Slack
-- message refs, reminders, outbox rows and audit events, recorded in purges. A plan is taken only
-- when every event of its chain is below `sealed_to`: sealed, summed by the metrics rollup (so the
-- counters keep counting it) and, once any seal has been signed, under a signed seal (so a
-- published seal vouched for the pruned hashes before they left); a plan with newer events waits
-- for a later call. Each pruned event leaves its line in audit_pruned. Final statuses are named, and
-- the open ones excluded as plans_final_updated_at's predicate does, so the planner reads only that
-- index. The purge flag is transaction-local and switched off before returning. A call that takes
-- nothing writes no purges row.
CREATE FUNCTION countersign_purge_plans(purge_before timestamptz, purge_reason text) RETURNS integer
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
REVOKE ALL ON FUNCTION countersign_purge_plans(timestamptz, text) FROM PUBLIC;
--> statement-breakpoint

-- The admission guard of a plan's INSERT (src/service/agents/agent-limits.ts): called in its
-- VALUES, it returns the agent id to store, or raises CSLIM when the agent is at a limit. Each
-- submission in flight (from the guard to its commit) holds one of 8 slot locks of its agent under
-- the agent's gate held shared, so at most 7 others can commit after its count unseen: an agent 8
-- or more below both limits is admitted without waiting. Nearer, it takes the gate exclusively,
-- which waits for every submission in flight, and counts exactly. p_recent and p_open are the
-- counts the submission read just before (readAgentUsage): far from both limits (2 x 8 below) they
-- choose the shared path without counting again, and under its slot agent_admissions' lifetime
-- total, a bound on both counts, admits without counting at all. A submission on the shared path
-- that finds itself near cannot upgrade its lock without risking a deadlock: it is refused, and told
-- to retry at once. Being VOLATILE, each count takes a snapshot of its own, after the lock.
-- Locks: gate (1414, agent), slots (1415..1422, agent); the two-key advisory lock space does not
-- overlap the one-key locks of migration and audit.
CREATE FUNCTION countersign_admit_plan(p_agent uuid, p_since timestamptz, p_per_minute integer, p_max_pending integer, p_recent integer, p_open integer) RETURNS uuid
VOLATILE AS $$
DECLARE
  slots CONSTANT integer := 8;
  agent_key CONSTANT integer := hashtext(p_agent::text);
  n_recent integer;
  n_open integer;
  n_admitted bigint;
  held integer;
BEGIN
  IF p_recent + 2 * slots <= p_per_minute AND p_open + 2 * slots <= p_max_pending THEN
    n_recent := p_recent;
    n_open := p_open;
  ELSE
    SELECT count(*) INTO n_recent FROM (SELECT 1 FROM plans WHERE agent_id = p_agent AND created_at > p_since LIMIT p_per_minute) r;
    SELECT count(*) INTO n_open FROM (SELECT 1 FROM plans WHERE agent_id = p_agent AND status IN ('pending', 'approved') LIMIT p_max_pending) o;
  END IF;
  IF n_recent + slots <= p_per_minute AND n_open + slots <= p_max_pending THEN
    PERFORM pg_advisory_xact_lock_shared(1414, agent_key);
    FOR s IN 0 .. slots - 1 LOOP
      IF pg_try_advisory_xact_lock(1415 + s, agent_key) THEN
        held := s;
        EXIT;
      END IF;
    END LOOP;
    IF held IS NULL THEN
      held := floor(random() * slots)::integer;
      PERFORM pg_advisory_xact_lock(1415 + held, agent_key);
    END IF;
    PERFORM set_config('countersign.admit_slot', held::text, true);
    -- Read under the slot: it bounds who may be in flight unseen from here on, not before it.
    SELECT coalesce(sum(admitted), 0) INTO n_admitted FROM agent_admissions WHERE agent_id = p_agent;
    IF n_admitted + slots <= p_per_minute AND n_admitted + slots <= p_max_pending THEN
      RETURN p_agent;
    END IF;
    SELECT count(*) INTO n_recent FROM (SELECT 1 FROM plans WHERE agent_id = p_agent AND created_at > p_since LIMIT p_per_minute) r;
    SELECT count(*) INTO n_open FROM (SELECT 1 FROM plans WHERE agent_id = p_agent AND status IN ('pending', 'approved') LIMIT p_max_pending) o;
    IF n_recent + slots <= p_per_minute AND n_open + slots <= p_max_pending THEN
      RETURN p_agent;
    END IF;
    RAISE EXCEPTION 'agent % came near its limits while submitting (% plans in the last minute of %, % open of %)', p_agent, n_recent, p_per_minute, n_open, p_max_pending
      USING ERRCODE = 'CSLIM';
  END IF;
  PERFORM pg_advisory_xact_lock(1414, agent_key);
  -- The gate held exclusively: no submission of the agent holds a slot, so slot 0's row is free.
  PERFORM set_config('countersign.admit_slot', '0', true);
  SELECT count(*) INTO n_recent FROM (SELECT 1 FROM plans WHERE agent_id = p_agent AND created_at > p_since LIMIT p_per_minute) r;
  SELECT count(*) INTO n_open FROM (SELECT 1 FROM plans WHERE agent_id = p_agent AND status IN ('pending', 'approved') LIMIT p_max_pending) o;
  IF n_recent >= p_per_minute OR n_open >= p_max_pending THEN
    RAISE EXCEPTION 'agent % is at its limits (% plans in the last minute of %, % open of %)', p_agent, n_recent, p_per_minute, n_open, p_max_pending
      USING ERRCODE = 'CSLIM';
  END IF;
  RETURN p_agent;
END;
$$ LANGUAGE plpgsql;
--> statement-breakpoint

-- The form without the counts read beforehand: it counts first.
CREATE FUNCTION countersign_admit_plan(p_agent uuid, p_since timestamptz, p_per_minute integer, p_max_pending integer) RETURNS uuid
VOLATILE AS $$
BEGIN
  RETURN countersign_admit_plan(p_agent, p_since, p_per_minute, p_max_pending, p_per_minute, p_max_pending);
END;
$$ LANGUAGE plpgsql;
--> statement-breakpoint
-- The guards run BEFORE the change, so a refusal writes nothing; TRUNCATE fires no row trigger and
-- has its own. plans_count_admission runs AFTER the INSERT it counts.
CREATE TRIGGER plans_immutable BEFORE DELETE OR UPDATE ON plans FOR EACH ROW EXECUTE FUNCTION countersign_plans_immutable();
--> statement-breakpoint
CREATE TRIGGER plans_document_fixed BEFORE UPDATE OF document, preview ON plans FOR EACH ROW EXECUTE FUNCTION countersign_plans_document_fixed();
--> statement-breakpoint
CREATE TRIGGER plans_no_truncate BEFORE TRUNCATE ON plans FOR EACH STATEMENT EXECUTE FUNCTION countersign_plans_immutable();
--> statement-breakpoint
CREATE TRIGGER plans_count_admission AFTER INSERT ON plans FOR EACH ROW EXECUTE FUNCTION countersign_count_admission();
--> statement-breakpoint
CREATE TRIGGER decisions_append_only BEFORE DELETE OR UPDATE ON decisions FOR EACH ROW EXECUTE FUNCTION countersign_append_only('purgeable');
--> statement-breakpoint
CREATE TRIGGER decisions_no_truncate BEFORE TRUNCATE ON decisions FOR EACH STATEMENT EXECUTE FUNCTION countersign_append_only();
--> statement-breakpoint
CREATE TRIGGER audit_events_append_only BEFORE DELETE OR UPDATE ON audit_events FOR EACH ROW EXECUTE FUNCTION countersign_append_only('purgeable');
--> statement-breakpoint
CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events FOR EACH STATEMENT EXECUTE FUNCTION countersign_append_only();
--> statement-breakpoint
CREATE TRIGGER audit_pruned_guard BEFORE INSERT OR DELETE OR UPDATE ON audit_pruned FOR EACH ROW EXECUTE FUNCTION countersign_audit_pruned_guard();
--> statement-breakpoint
CREATE TRIGGER audit_pruned_no_truncate BEFORE TRUNCATE ON audit_pruned FOR EACH STATEMENT EXECUTE FUNCTION countersign_append_only();
--> statement-breakpoint
CREATE TRIGGER audit_seals_append_only BEFORE DELETE OR UPDATE ON audit_seals FOR EACH ROW EXECUTE FUNCTION countersign_append_only();
--> statement-breakpoint
CREATE TRIGGER audit_seals_no_truncate BEFORE TRUNCATE ON audit_seals FOR EACH STATEMENT EXECUTE FUNCTION countersign_append_only();
--> statement-breakpoint
CREATE TRIGGER audit_seal_signatures_append_only BEFORE DELETE OR UPDATE ON audit_seal_signatures FOR EACH ROW EXECUTE FUNCTION countersign_append_only();
--> statement-breakpoint
CREATE TRIGGER audit_seal_signatures_no_truncate BEFORE TRUNCATE ON audit_seal_signatures FOR EACH STATEMENT EXECUTE FUNCTION countersign_append_only();
--> statement-breakpoint
CREATE TRIGGER purges_append_only BEFORE DELETE OR UPDATE ON purges FOR EACH ROW EXECUTE FUNCTION countersign_append_only();
--> statement-breakpoint
CREATE TRIGGER purges_no_truncate BEFORE TRUNCATE ON purges FOR EACH STATEMENT EXECUTE FUNCTION countersign_append_only();
