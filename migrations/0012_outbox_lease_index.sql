-- The lease walks undelivered rows in id order; with available_at in the index, rows still backing
-- off are passed over in the index instead of read from the table one by one (0.6 ms with 1 000
-- waiting rows and nothing due, where 0009's (id) index took 1.5-16 ms under load).
DROP INDEX "outbox_undelivered";--> statement-breakpoint
CREATE INDEX "outbox_undelivered_by_id" ON "outbox" USING btree ("id","available_at") WHERE delivered_at IS NULL AND dead_at IS NULL;