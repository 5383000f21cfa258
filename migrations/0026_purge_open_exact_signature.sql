-- 0025's countersign_purge_open() took (text, text), but the guards call it with TG_TABLE_NAME, a
-- `name`: where a role may CREATE in schema public (every role, in a public schema made before
-- PostgreSQL 15), it could add public.countersign_purge_open(name, text) returning true, an exact
-- match the guards' call would prefer. The one function now has exactly the argument types the
-- call passes, so no other can be added beside it or preferred to it. Body unchanged.
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
DROP FUNCTION countersign_purge_open(text, text);
