ALTER TYPE "public"."plan_status" ADD VALUE 'superseded';--> statement-breakpoint
ALTER TYPE "public"."plan_status" ADD VALUE 'revoked';--> statement-breakpoint
ALTER TABLE "plans" ADD COLUMN "supersedes" uuid;--> statement-breakpoint
ALTER TABLE "plans" ADD COLUMN "superseded_by" uuid;