ALTER TABLE "agents" ADD COLUMN "webhook_secret" text;--> statement-breakpoint
ALTER TABLE "plans" ADD COLUMN "callback_url" text;--> statement-breakpoint
CREATE OR REPLACE FUNCTION countersign_plans_immutable() RETURNS trigger AS $$
BEGIN
  IF NEW.id IS DISTINCT FROM OLD.id OR NEW.agent_id IS DISTINCT FROM OLD.agent_id
     OR NEW.hash IS DISTINCT FROM OLD.hash OR NEW.document IS DISTINCT FROM OLD.document
     OR NEW.preview IS DISTINCT FROM OLD.preview OR NEW.expires_at IS DISTINCT FROM OLD.expires_at
     OR NEW.request_digest IS DISTINCT FROM OLD.request_digest
     OR NEW.idempotency_key IS DISTINCT FROM OLD.idempotency_key
     OR NEW.callback_url IS DISTINCT FROM OLD.callback_url
     OR (OLD."grant" IS NOT NULL AND (NEW."grant" IS DISTINCT FROM OLD."grant" OR NEW.grant_expires_at IS DISTINCT FROM OLD.grant_expires_at)) THEN
    RAISE EXCEPTION 'plan % is immutable: a revision is a new plan', OLD.id USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END;
$$ LANGUAGE plpgsql;
