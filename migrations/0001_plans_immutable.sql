-- A stored plan never changes: what was hashed, previewed and decided on is fixed. Only the
-- lifecycle columns move. (The executor still recomputes the hash, in case this is bypassed.)
CREATE FUNCTION countersign_plans_immutable() RETURNS trigger AS $$
BEGIN
  IF NEW.id IS DISTINCT FROM OLD.id OR NEW.agent_id IS DISTINCT FROM OLD.agent_id
     OR NEW.hash IS DISTINCT FROM OLD.hash OR NEW.document IS DISTINCT FROM OLD.document
     OR NEW.preview IS DISTINCT FROM OLD.preview OR NEW.expires_at IS DISTINCT FROM OLD.expires_at
     OR NEW.request_digest IS DISTINCT FROM OLD.request_digest
     OR NEW.idempotency_key IS DISTINCT FROM OLD.idempotency_key THEN
    RAISE EXCEPTION 'plan % is immutable: a revision is a new plan', OLD.id USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END;
$$ LANGUAGE plpgsql;
--> statement-breakpoint
CREATE TRIGGER plans_immutable BEFORE UPDATE ON plans FOR EACH ROW EXECUTE FUNCTION countersign_plans_immutable();
