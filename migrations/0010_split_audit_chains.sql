-- The audit log stops being one chain appended under one lock (every plan write in the system
-- waited for it): each plan's events chain under the plan's row lock, events with no plan keep
-- a small system chain, and audit_seals ties them together (docs/DESIGN.md, "Audit log").
CREATE TABLE "audit_seals" (
	"seq" bigint PRIMARY KEY NOT NULL,
	"prev_hash" text NOT NULL,
	"xid_from" "xid8" NOT NULL,
	"xid_to" "xid8" NOT NULL,
	"events" integer NOT NULL,
	"events_total" bigint NOT NULL,
	"hash" text NOT NULL,
	"sealed_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
-- Added without a default first, so the events already written keep xid NULL: they are the
-- legacy global chain, verified the old way against audit_head. Every later event records
-- the transaction that wrote it.
ALTER TABLE "audit_events" ADD COLUMN "xid" "xid8";
--> statement-breakpoint
ALTER TABLE "audit_events" ALTER COLUMN "xid" SET DEFAULT pg_current_xact_id();
--> statement-breakpoint
CREATE INDEX "audit_events_xid" ON "audit_events" USING btree ("xid");
--> statement-breakpoint
CREATE UNIQUE INDEX "audit_events_one_successor" ON "audit_events" USING btree ("prev_hash") WHERE xid IS NOT NULL;
--> statement-breakpoint
-- Seal 0 covers the legacy chain's head (nothing on a fresh install), with the hash
-- src/service/seal-audit.ts sealHash() defines: every later seal links back to it.
INSERT INTO "audit_seals" ("seq", "prev_hash", "xid_from", "xid_to", "events", "events_total", "hash", "sealed_at")
SELECT 0, g.genesis, '0', '0', n.legacy, n.legacy,
       'sha256:' || encode(sha256(convert_to(
         'countersign audit seal v1' || E'\n' || 'seq 0' || E'\n' || 'prev ' || g.genesis || E'\n' || 'xids 0 0' || E'\n'
         || coalesce((SELECT h.last_event_id || ' ' || h.hash || E'\n' FROM "audit_head" h WHERE h.id = 1), ''),
       'UTF8')), 'hex'),
       now()
  FROM (SELECT 'sha256:' || repeat('0', 64) AS genesis) AS g, (SELECT count(*) AS legacy FROM "audit_events") AS n;
--> statement-breakpoint
-- Seals are written once and never changed; the legacy head is frozen from now on.
CREATE TRIGGER audit_seals_append_only BEFORE UPDATE OR DELETE ON audit_seals FOR EACH ROW EXECUTE FUNCTION countersign_append_only();
--> statement-breakpoint
CREATE TRIGGER audit_seals_no_truncate BEFORE TRUNCATE ON audit_seals FOR EACH STATEMENT EXECUTE FUNCTION countersign_append_only();
--> statement-breakpoint
CREATE TRIGGER audit_head_append_only BEFORE UPDATE OR DELETE ON audit_head FOR EACH ROW EXECUTE FUNCTION countersign_append_only();
--> statement-breakpoint
CREATE TRIGGER audit_head_no_truncate BEFORE TRUNCATE ON audit_head FOR EACH STATEMENT EXECUTE FUNCTION countersign_append_only();
