-- EXPLAIN ANALYZE of the reads that grow with stored history, as the code issues them, on a
-- database seeded by bench/scans/seed.sql. Run: psql -f bench/scans/explain.sql <database>;
-- with -v before=1 the indexes of migrations 0009, 0011 and 0012 are dropped first, to see the plans without them.
-- Everything runs in one transaction rolled back at the end, so the seeded state (and the
-- indexes) are kept between runs.
\set ON_ERROR_STOP 1
\if :{?before}
\else
  \set before 0
\endif
BEGIN;
\if :before
  DROP INDEX outbox_undelivered_by_id, outbox_undelivered_plan_kind, outbox_dead_plan, plans_created_at, plans_status_created_at, plans_pending_expiry;
\endif
\echo '== outbox lease, nothing due (src/service/outbox.ts leaseNext)'
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) UPDATE outbox SET available_at = now() + interval '60 seconds', attempts = attempts + 1
WHERE id = (
  SELECT o.id FROM outbox o
  WHERE o.delivered_at IS NULL AND o.dead_at IS NULL AND o.available_at <= now()
    AND o.kind IN ('slack.post', 'slack.update', 'webhook')
    AND NOT EXISTS (
      SELECT 1 FROM outbox earlier
      WHERE earlier.plan_id = o.plan_id AND earlier.kind = o.kind AND earlier.id < o.id
        AND earlier.delivered_at IS NULL AND earlier.dead_at IS NULL)
  ORDER BY o.id LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING id, plan_id, kind, payload, attempts;
\echo '== outbox lease, every undelivered row due'
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) UPDATE outbox SET available_at = now() + interval '2 hours', attempts = attempts + 1
WHERE id = (
  SELECT o.id FROM outbox o
  WHERE o.delivered_at IS NULL AND o.dead_at IS NULL AND o.available_at <= now() + interval '2 hours'
    AND o.kind IN ('slack.post', 'slack.update', 'webhook')
    AND NOT EXISTS (
      SELECT 1 FROM outbox earlier
      WHERE earlier.plan_id = o.plan_id AND earlier.kind = o.kind AND earlier.id < o.id
        AND earlier.delivered_at IS NULL AND earlier.dead_at IS NULL)
  ORDER BY o.id LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING id, plan_id, kind, payload, attempts;
\echo '== outbox lease, every undelivered row due, walked in id order (the plan the planner picks when it expects many due rows: issue 13 saw 3.4 s)'
SET LOCAL enable_sort = off;
SET LOCAL enable_hashjoin = off;
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) UPDATE outbox SET available_at = now() + interval '2 hours', attempts = attempts + 1
WHERE id = (
  SELECT o.id FROM outbox o
  WHERE o.delivered_at IS NULL AND o.dead_at IS NULL AND o.available_at <= now() + interval '2 hours'
    AND o.kind IN ('slack.post', 'slack.update', 'webhook')
    AND NOT EXISTS (
      SELECT 1 FROM outbox earlier
      WHERE earlier.plan_id = o.plan_id AND earlier.kind = o.kind AND earlier.id < o.id
        AND earlier.delivered_at IS NULL AND earlier.dead_at IS NULL)
  ORDER BY o.id LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING id, plan_id, kind, payload, attempts;
RESET enable_sort;
RESET enable_hashjoin;
\echo '== plan page: dead-lettered deliveries (src/service/review-plan.ts reviewPlan)'
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) SELECT * FROM outbox WHERE plan_id = md5('plan1')::uuid AND dead_at IS NOT NULL ORDER BY id;
\echo '== plan page live stream: version and dead count (src/service/plan-signals.ts)'
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) SELECT (SELECT max(id) FROM audit_events WHERE plan_id = md5('plan1')::uuid) AS v,
  (SELECT count(*) FROM outbox WHERE plan_id = md5('plan1')::uuid AND dead_at IS NOT NULL) AS dead;
\echo '== browser list, before issue 13: newest 100 of every status'
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) SELECT * FROM plans ORDER BY created_at DESC LIMIT 100;
\echo '== browser list: every pending plan, soonest expiry first, first page (listPendingForReview)'
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) SELECT * FROM plans WHERE status = 'pending' ORDER BY expires_at, id LIMIT 101;
\echo '== browser list: pending, the page after a cursor (src/service/review-plan.ts listPendingForReview)'
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) SELECT * FROM plans WHERE status = 'pending' AND (expires_at, id) > (now() + interval '2 hours', '00000000-0000-4000-8000-000000000000'::uuid) ORDER BY expires_at, id LIMIT 101;
\echo '== browser list: the newest 100 that are not pending (listPlansForReview with every other status)'
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) SELECT * FROM plans WHERE status IN ('approved', 'rejected', 'expired', 'cancelled', 'executing', 'applied', 'failed', 'stale') ORDER BY created_at DESC LIMIT 100;
\echo '== browser list filtered by a rare status (?status=failed)'
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) SELECT * FROM plans WHERE status IN ('failed') ORDER BY created_at DESC LIMIT 100;
\echo '== Slack home / login: pending plans waiting for a person (src/service/plans-for-person.ts)'
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) SELECT id, status, hash, document, expires_at FROM plans WHERE status = 'pending' ORDER BY created_at DESC LIMIT 200;
\echo '== reminders, before issue 13: every pending plan document (src/service/remind-due.ts)'
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) SELECT id, document, expires_at FROM plans WHERE status = 'pending' AND expires_at > now();
\echo '== reminders: only plans whose own point has come and is not recorded (points 7200 and 600 s on crm)'
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) SELECT id, document, expires_at FROM plans
WHERE status = 'pending' AND expires_at > now() AND expires_at <= now() + interval '7200 seconds'
  AND EXISTS (SELECT 1 FROM (VALUES ('crm'::text, 7200::integer), ('crm'::text, 600::integer), (NULL::text, 7200::integer)) AS point(target, seconds)
    WHERE (point.target = (document::json #>> '{actions,0,target}') OR (point.target IS NULL AND (document::json #>> '{actions,0,target}') NOT IN ('crm')))
      AND expires_at <= now() + point.seconds * interval '1 second'
      AND NOT EXISTS (SELECT 1 FROM plan_reminders sent WHERE sent.plan_id = plans.id AND sent.seconds_before = point.seconds));
ROLLBACK;
