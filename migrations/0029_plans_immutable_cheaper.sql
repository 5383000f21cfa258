-- The plans' immutability guard (0001, last replaced in 0028) compared each fixed column of the
-- new row with `(to_jsonb(OLD) - mutable) -> key`, in the WHERE of a query over the new row's
-- columns: the old row, document and preview included, was made jsonb once per column, some 25
-- times per UPDATE. With a document and a preview of 256 KiB each that was 138 ms per UPDATE
-- (psql, 50 rows, 2026-12-04), under the row lock, at every decision, claim, heartbeat and
-- report; 0.12 ms with 2 KiB of each. Making each row jsonb once still took 70-100 ms: the two
-- large columns were most of it. Now:
-- * countersign_plans_immutable compares every column but the mutable ones, the document and the
--   preview, with each row made jsonb once: 0.06-0.4 ms per UPDATE with 256 KiB columns. It stays
--   fail-closed: a column added later is fixed unless named mutable (db-guards.test.ts).
-- * countersign_plans_document_fixed, on an UPDATE OF document or preview only (the product names
--   them in none), refuses a change to either, compared as they are.
-- The messages have the same text; when the document or preview is among the changes, only they are
-- named. Both functions pin search_path as 0028 does. PostgreSQL fires an UPDATE OF trigger on the
-- statement's SET list, not on what another BEFORE trigger changes: a row trigger that set the
-- document would go unseen, so db-guards-search-path.test.ts pins these two as the only BEFORE
-- UPDATE row triggers on plans.
CREATE OR REPLACE FUNCTION countersign_plans_immutable() RETURNS trigger
  SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  mutable CONSTANT text[] := ARRAY['status', 'updated_at', 'reject_reason', 'grant', 'grant_expires_at', 'claim_token', 'lease_expires_at', 'claims', 'outcome', 'superseded_by'];
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
  RETURN NEW;
END;
$$ LANGUAGE plpgsql;

--> statement-breakpoint
CREATE OR REPLACE FUNCTION countersign_plans_document_fixed() RETURNS trigger
  SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  -- As countersign_plans_immutable's, for the message.
  mutable CONSTANT text[] := ARRAY['status', 'updated_at', 'reject_reason', 'grant', 'grant_expires_at', 'claim_token', 'lease_expires_at', 'claims', 'outcome', 'superseded_by'];
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
CREATE TRIGGER plans_document_fixed BEFORE UPDATE OF document, preview ON plans FOR EACH ROW EXECUTE FUNCTION countersign_plans_document_fixed();
