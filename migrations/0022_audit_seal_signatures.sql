CREATE TABLE "audit_seal_signatures" (
	"seq" bigint PRIMARY KEY NOT NULL,
	"statement" text NOT NULL,
	"kid" text NOT NULL,
	"signature" text NOT NULL,
	"signed_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
-- A signature, once written and published, never changes or leaves (0008's guard, as audit_seals).
CREATE TRIGGER audit_seal_signatures_append_only BEFORE UPDATE OR DELETE ON audit_seal_signatures FOR EACH ROW EXECUTE FUNCTION countersign_append_only();
--> statement-breakpoint
CREATE TRIGGER audit_seal_signatures_no_truncate BEFORE TRUNCATE ON audit_seal_signatures FOR EACH STATEMENT EXECUTE FUNCTION countersign_append_only();
