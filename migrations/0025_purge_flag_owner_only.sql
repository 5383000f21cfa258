-- Issue 16 review: 0023 let anyone who may DELETE from audit_events (or INSERT into audit_pruned,
-- or DELETE decisions and plans) do so after set_config('countersign.purge', 'on', true), where
-- 0008 never let audit events go at all. The flag now opens the guards only for the role that
-- countersign_purge_plans() runs as: SECURITY DEFINER, so inside it current_user is the function's
-- owner (the role that ran the migrations, which owns these tables). Any other role that sets the
-- flag by hand is refused, however many table privileges it holds; calling the function is the way.
-- The owner, and a superuser, can still set it by hand, as they can disable a trigger: a guard
-- inside the database cannot stop them (PGlite runs as one superuser, who owns everything), which
-- is what `audit verify` and the published signed seals are for.
--
-- Its own search_path, so a schema or operator put first by the caller changes nothing here; the
-- owner is found by the function's name, schema and argument type oids (not a cast a cached plan
-- would keep). Called only on a refused or purge path: an ordinary UPDATE of plans never gets here.
CREATE FUNCTION countersign_purge_open(guarded_table text, guarded_op text) RETURNS boolean
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
-- 0008's guard, the purge's way through it now asked of countersign_purge_open().
CREATE OR REPLACE FUNCTION countersign_append_only() RETURNS trigger AS $$
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
-- 0018's, likewise (the mutable columns unchanged).
CREATE OR REPLACE FUNCTION countersign_plans_immutable() RETURNS trigger AS $$
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
-- 0023's checkpoint guard, likewise.
CREATE OR REPLACE FUNCTION countersign_audit_pruned_guard() RETURNS trigger AS $$
BEGIN
  IF TG_OP = 'INSERT' AND public.countersign_purge_open(TG_TABLE_NAME, TG_OP) THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'audit_pruned is written only by countersign_purge_plans() and never changed: % refused', TG_OP
    USING ERRCODE = 'integrity_constraint_violation';
END;
$$ LANGUAGE plpgsql;
