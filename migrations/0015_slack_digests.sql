-- Digests (issue 14): when a channel's queue would delay previews too long, one message lists the
-- waiting plans (src/slack/digest.ts). Each listed plan's slack_messages row points at the digest,
-- so its later events reply in the digest's thread, and `digest` says the message is re-rendered
-- from all its plans rather than replaced by one plan's preview. A constant default: no rewrite.
ALTER TABLE "slack_messages" ADD COLUMN "digest" boolean DEFAULT false NOT NULL;--> statement-breakpoint
CREATE INDEX "slack_messages_digest" ON "slack_messages" USING btree ("channel","ts") WHERE digest;
