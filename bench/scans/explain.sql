-- EXPLAIN ANALYZE of the reads that grow with stored history, as the code issues them, on a
-- database seeded by bench/scans/seed.sql. Run: psql -f bench/scans/explain.sql <database>;
-- with -v before=1 the history reads' own indexes (the DROP INDEX below) are dropped first, to see the plans without them.
-- Everything runs in one transaction rolled back at the end, so the seeded state (and the
-- indexes) are kept between runs.
\set ON_ERROR_STOP 1
\if :{?before}
\else
  \set before 0
\endif
BEGIN;
\if :before
  DROP INDEX outbox_lane_order, outbox_undelivered_plan_kind, outbox_dead_plan, plans_created_at, plans_status_created_at, plans_pending_expiry;
\endif
-- The lanes' own rows (outbox_lanes), in this transaction only: the lease reads them.
INSERT INTO outbox_lanes (lane, leased_until) SELECT 'slack:C0SEED' || n, '-infinity' FROM generate_series(0, 9) AS n ON CONFLICT DO NOTHING;
\echo '== outbox lanes with work: skip scan (src/service/delivery/outbox-lease.ts leaseLanes)'
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) WITH RECURSIVE lanes(lane) AS (
  (SELECT lane FROM outbox WHERE delivered_at IS NULL AND dead_at IS NULL ORDER BY lane LIMIT 1)
  UNION ALL
  SELECT (SELECT o.lane FROM outbox o WHERE o.delivered_at IS NULL AND o.dead_at IS NULL AND o.lane > lanes.lane ORDER BY o.lane LIMIT 1)
  FROM lanes WHERE lanes.lane IS NOT NULL)
SELECT lane FROM lanes WHERE lane IS NOT NULL;
\echo '== outbox lane lease, nothing due (leaseLanes)'
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) UPDATE outbox_lanes l SET leased_by = 'bench', leased_until = now() + interval '60 seconds'
WHERE l.lane IN (
  SELECT c.lane FROM outbox_lanes c
  WHERE c.lane = ANY (ARRAY(SELECT 'slack:C0SEED' || n FROM generate_series(0, 9) AS n)) AND (c.leased_by IS NULL OR c.leased_until <= now())
    AND EXISTS (SELECT 1 FROM outbox o WHERE o.lane = c.lane AND o.delivered_at IS NULL AND o.dead_at IS NULL AND o.available_at <= now())
  ORDER BY c.leased_until LIMIT 8 FOR UPDATE SKIP LOCKED)
RETURNING l.lane;
\echo '== outbox lane lease, every undelivered row due (leaseLanes)'
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) UPDATE outbox_lanes l SET leased_by = 'bench', leased_until = now() + interval '2 hours'
WHERE l.lane IN (
  SELECT c.lane FROM outbox_lanes c
  WHERE c.lane = ANY (ARRAY(SELECT 'slack:C0SEED' || n FROM generate_series(0, 9) AS n)) AND (c.leased_by IS NULL OR c.leased_until <= now() + interval '2 hours')
    AND EXISTS (SELECT 1 FROM outbox o WHERE o.lane = c.lane AND o.delivered_at IS NULL AND o.dead_at IS NULL AND o.available_at <= now() + interval '2 hours')
  ORDER BY c.leased_until LIMIT 8 FOR UPDATE SKIP LOCKED)
RETURNING l.lane;
\echo '== a lane next delivery, every row due, coalescing up to 10 (src/service/delivery/outbox-lease.ts takeNext)'
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) WITH head AS (
  SELECT o.id, o.plan_id, o.kind, (o.payload::json->>'type') IN ('plan.submitted', 'plan.reminder') AS alone FROM outbox o
  WHERE o.lane = 'slack:C0SEED3' AND o.delivered_at IS NULL AND o.dead_at IS NULL AND o.available_at <= now() + interval '2 hours'
    AND NOT EXISTS (
      SELECT 1 FROM outbox earlier
      WHERE earlier.plan_id = o.plan_id AND earlier.kind = o.kind AND earlier.id < o.id
        AND earlier.delivered_at IS NULL AND earlier.dead_at IS NULL)
  ORDER BY o.lane, o.priority, o.id LIMIT 1),
followers AS (
  SELECT f.id, (f.payload::json->>'type') IN ('plan.submitted', 'plan.reminder') AS alone FROM outbox f, head
  WHERE NOT head.alone AND f.plan_id = head.plan_id AND f.kind = head.kind AND f.id > head.id
    AND f.delivered_at IS NULL AND f.dead_at IS NULL AND f.available_at <= now() + interval '2 hours'
  ORDER BY f.id LIMIT 9),
taken AS (
  SELECT id FROM head
  UNION ALL
  SELECT id FROM followers WHERE id < coalesce((SELECT min(id) FROM followers WHERE alone), 9007199254740991))
UPDATE outbox SET available_at = now() + interval '3 hours', attempts = attempts + 1
WHERE id IN (SELECT id FROM taken)
RETURNING id, plan_id, kind, payload, attempts;
\echo '== plan page: dead-lettered deliveries (src/service/review/review-plan.ts reviewPlan)'
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) SELECT * FROM outbox WHERE plan_id = md5('plan1')::uuid AND dead_at IS NOT NULL ORDER BY id;
\echo '== plan page live stream: version and dead count (src/service/records/plan-signals.ts)'
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) SELECT (SELECT max(id) FROM audit_events WHERE plan_id = md5('plan1')::uuid) AS v,
  (SELECT count(*) FROM outbox WHERE plan_id = md5('plan1')::uuid AND dead_at IS NOT NULL) AS dead;
\echo '== browser list, unpaged: newest 100 of every status (for comparison with the pending-first pages below)'
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) SELECT * FROM plans ORDER BY created_at DESC LIMIT 100;
\echo '== browser list: every pending plan, soonest expiry first, first page (listPendingForReview)'
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) SELECT * FROM plans WHERE status = 'pending' ORDER BY expires_at, id LIMIT 101;
\echo '== browser list: pending, the page after a cursor (src/service/review/review-plan.ts listPendingForReview)'
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) SELECT * FROM plans WHERE status = 'pending' AND (expires_at, id) > (now() + interval '2 hours', '00000000-0000-4000-8000-000000000000'::uuid) ORDER BY expires_at, id LIMIT 101;
\echo '== browser list: the newest 100 that are not pending (listPlansForReview with every other status)'
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) SELECT * FROM plans WHERE status IN ('approved', 'rejected', 'expired', 'cancelled', 'executing', 'applied', 'failed', 'stale') ORDER BY created_at DESC LIMIT 100;
\echo '== browser list filtered by a rare status (?status=failed)'
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) SELECT * FROM plans WHERE status IN ('failed') ORDER BY created_at DESC LIMIT 100;
\echo '== Slack home / login: pending plans waiting for a person (src/service/review/plans-for-person.ts)'
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) SELECT id, status, hash, document, expires_at FROM plans WHERE status = 'pending' ORDER BY created_at DESC LIMIT 200;
\echo '== reminders, unfiltered: every pending plan document (for comparison with the due points below)'
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) SELECT id, document, expires_at FROM plans WHERE status = 'pending' AND expires_at > now();
\echo '== reminders: only plans whose own point has come and is not recorded (points 7200 and 600 s on crm)'
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) SELECT id, document, expires_at FROM plans
WHERE status = 'pending' AND expires_at > now() AND expires_at <= now() + interval '7200 seconds'
  AND EXISTS (SELECT 1 FROM (VALUES ('crm'::text, 7200::integer), ('crm'::text, 600::integer), (NULL::text, 7200::integer)) AS point(target, seconds)
    WHERE (point.target = (document::json #>> '{actions,0,target}') OR (point.target IS NULL AND (document::json #>> '{actions,0,target}') NOT IN ('crm')))
      AND expires_at <= now() + point.seconds * interval '1 second'
      AND NOT EXISTS (SELECT 1 FROM plan_reminders sent WHERE sent.plan_id = plans.id AND sent.seconds_before = point.seconds));
ROLLBACK;
