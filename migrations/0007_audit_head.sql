CREATE TABLE "audit_head" (
	"id" integer PRIMARY KEY NOT NULL,
	"last_event_id" integer NOT NULL,
	"hash" text NOT NULL
);
--> statement-breakpoint
INSERT INTO "audit_head" ("id", "last_event_id", "hash") SELECT 1, "id", "hash" FROM "audit_events" ORDER BY "id" DESC LIMIT 1;
