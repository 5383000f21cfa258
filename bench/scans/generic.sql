-- The reads that grow with stored history, PREPAREd as the code sends them: values are parameters,
-- except the plan statuses and the outbox's undelivered tests, which are written into the text
-- (src/store/plan-status-sql.ts; outbox-lease.ts), run under a plan_cache_mode: force_generic_plan is the plan PostgreSQL's default `auto` may
-- settle on after a statement's fifth execution on a connection, the worst `auto` can pick
-- (src/store/named-statements.ts); force_custom_plan plans each execution for its values.
--   psql -v mode=force_generic_plan -f bench/scans/generic.sql <database seeded by bench/scans/seed.sql>
--   psql -v mode=force_custom_plan -f bench/scans/generic.sql <database>
-- Everything runs in one transaction rolled back at the end.
\set ON_ERROR_STOP 1
\if :{?mode}
\else
  \set mode force_generic_plan
\endif
BEGIN;
SET LOCAL plan_cache_mode = :mode;
INSERT INTO outbox_lanes (lane, leased_until) SELECT 'slack:C0SEED' || n, '-infinity' FROM generate_series(0, 9) AS n ON CONFLICT DO NOTHING;

\echo '== outbox lane lease, nothing due (leaseLanes)'
PREPARE lease(text, timestamptz, text[], timestamptz, int) AS UPDATE outbox_lanes l SET leased_by = $1, leased_until = $2
WHERE l.lane IN (
  SELECT c.lane FROM outbox_lanes c
  WHERE c.lane = ANY ($3) AND (c.leased_by IS NULL OR c.leased_until <= $4)
    AND EXISTS (SELECT 1 FROM outbox o WHERE o.lane = c.lane AND o.delivered_at IS NULL AND o.dead_at IS NULL AND o.available_at <= $4)
  ORDER BY c.leased_until LIMIT $5 FOR UPDATE SKIP LOCKED)
RETURNING l.lane;
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) EXECUTE lease('bench', now() + interval '60 seconds', ARRAY['slack:C0SEED0','slack:C0SEED1','slack:C0SEED2','slack:C0SEED3','slack:C0SEED4','slack:C0SEED5','slack:C0SEED6','slack:C0SEED7','slack:C0SEED8','slack:C0SEED9'], now(), 8);
\echo '== outbox lane lease, every undelivered row due (leaseLanes)'
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) EXECUTE lease('bench', now() + interval '2 hours', ARRAY['slack:C0SEED0','slack:C0SEED1','slack:C0SEED2','slack:C0SEED3','slack:C0SEED4','slack:C0SEED5','slack:C0SEED6','slack:C0SEED7','slack:C0SEED8','slack:C0SEED9'], now() + interval '2 hours', 8);

\echo '== browser list: every pending plan, soonest expiry first, first page (listPendingForReview)'
PREPARE pending_page(int) AS SELECT * FROM plans WHERE status = 'pending' ORDER BY expires_at, id LIMIT $1;
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) EXECUTE pending_page(101);
\echo '== browser list: pending, the page after a cursor (listPendingForReview)'
PREPARE pending_after(timestamptz, uuid, int) AS SELECT * FROM plans WHERE status = 'pending' AND (expires_at, id) > ($1, $2) ORDER BY expires_at, id LIMIT $3;
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) EXECUTE pending_after(now() + interval '2 hours', '00000000-0000-4000-8000-000000000000', 101);
\echo '== browser list: the newest 100 that are not pending (listPlansForReview)'
PREPARE others(int) AS
  SELECT * FROM plans WHERE status IN ('approved', 'rejected', 'expired', 'cancelled', 'executing', 'applied', 'failed', 'stale', 'superseded', 'revoked') ORDER BY created_at DESC LIMIT $1;
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) EXECUTE others(100);
\echo '== browser list filtered by a rare status (?status=failed)'
PREPARE one_status(int) AS SELECT * FROM plans WHERE status IN ('failed') ORDER BY created_at DESC LIMIT $1;
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) EXECUTE one_status(100);
\echo '== Slack home / login: pending plans waiting for a person, newest (plans-for-person.ts)'
PREPARE person_newest(int) AS SELECT id, status, hash, document, expires_at FROM plans WHERE status = 'pending' ORDER BY created_at DESC LIMIT $1;
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) EXECUTE person_newest(200);
\echo '== Slack home / login: pending plans waiting for a person, soonest (plans-for-person.ts)'
PREPARE person_soonest(timestamptz, int) AS SELECT id, status, hash, document, expires_at FROM plans WHERE status = 'pending' AND expires_at > $1 ORDER BY expires_at, id LIMIT $2;
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) EXECUTE person_soonest(now(), 200);
\echo '== expiry sweep: pending plans past their expiry (expire-due.ts)'
PREPARE expire_due(timestamptz, int) AS SELECT id FROM plans WHERE status = 'pending' AND expires_at <= $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED;
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) EXECUTE expire_due(now(), 100);
\echo '== executor claim: an approved plan whose grant holds, or a lapsed lease (claim-approved.ts)'
PREPARE claimable(timestamptz, int) AS SELECT id, status FROM plans
  WHERE ((status = 'approved' AND grant_expires_at > $1) OR (status = 'executing' AND lease_expires_at <= $1)) AND NOT EXISTS (SELECT 1 FROM pause)
  ORDER BY updated_at LIMIT $2 FOR UPDATE SKIP LOCKED;
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) EXECUTE claimable(now(), 1);
ROLLBACK;
