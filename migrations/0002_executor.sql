ALTER TABLE "plans" ADD COLUMN "grant" text;--> statement-breakpoint
ALTER TABLE "plans" ADD COLUMN "grant_expires_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "plans" ADD COLUMN "claim_token" text;--> statement-breakpoint
ALTER TABLE "plans" ADD COLUMN "lease_expires_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "plans" ADD COLUMN "claims" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "plans" ADD COLUMN "outcome" text;--> statement-breakpoint
CREATE UNIQUE INDEX "plans_claim_token" ON "plans" USING btree ("claim_token");--> statement-breakpoint
-- A grant, once issued, is as fixed as the plan it signs.
CREATE OR REPLACE FUNCTION countersign_plans_immutable() RETURNS trigger AS $$
BEGIN
  IF NEW.id IS DISTINCT FROM OLD.id OR NEW.agent_id IS DISTINCT FROM OLD.agent_id
     OR NEW.hash IS DISTINCT FROM OLD.hash OR NEW.document IS DISTINCT FROM OLD.document
     OR NEW.preview IS DISTINCT FROM OLD.preview OR NEW.expires_at IS DISTINCT FROM OLD.expires_at
     OR NEW.request_digest IS DISTINCT FROM OLD.request_digest
     OR NEW.idempotency_key IS DISTINCT FROM OLD.idempotency_key
     OR (OLD."grant" IS NOT NULL AND (NEW."grant" IS DISTINCT FROM OLD."grant" OR NEW.grant_expires_at IS DISTINCT FROM OLD.grant_expires_at)) THEN
    RAISE EXCEPTION 'plan % is immutable: a revision is a new plan', OLD.id USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END;
$$ LANGUAGE plpgsql;
