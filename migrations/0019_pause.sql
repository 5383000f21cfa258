CREATE TABLE "pause" (
	"id" smallint PRIMARY KEY DEFAULT 1 NOT NULL,
	"reason" text NOT NULL,
	"paused_by" text NOT NULL,
	"via" text NOT NULL,
	"since" timestamp with time zone NOT NULL,
	CONSTRAINT "pause_one_row" CHECK ("pause"."id" = 1)
);
