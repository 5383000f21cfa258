-- EXPLAIN ANALYZE of the delivery lanes page's reads (src/service/delivery/lane-health.ts laneHealth,
-- src/service/delivery/outbox-visibility.ts deadDeliveries), as the code issues them, on a database
-- seeded by bench/scans/seed.sql (e.g. -v plans=100000: 400 000 delivered rows, 1 000
-- undelivered in 10 lanes, 100 dead). Then the same reads with a backlog piled on top, inside
-- the transaction (rolled back): :backlog more undelivered rows in one lane (default 100 000) and
-- :dead more dead rows (default 10 000), neither vacuumed, as a live queue is.
-- Run: psql -f bench/scans/lane-health.sql <database>; -v before=1 drops the partial indexes first.
\set ON_ERROR_STOP 1
\if :{?before}
\else
  \set before 0
\endif
\if :{?backlog}
\else
  \set backlog 100000
\endif
\if :{?dead}
\else
  \set dead 10000
\endif
BEGIN;
\if :before
  DROP INDEX outbox_lane_order, outbox_undelivered_plan_kind, outbox_dead_plan;
\endif
INSERT INTO outbox_lanes (lane, leased_until) SELECT 'slack:C0SEED' || n, '-infinity' FROM generate_series(0, 9) AS n ON CONFLICT DO NOTHING;
\set health 'WITH work AS (SELECT lane, count(*) AS backlog, min(id) AS oldest_id FROM outbox WHERE delivered_at IS NULL AND dead_at IS NULL GROUP BY lane), dead AS (SELECT lane, count(*) AS dead FROM outbox WHERE dead_at IS NOT NULL GROUP BY lane), named AS (SELECT lane FROM work UNION SELECT lane FROM dead UNION SELECT lane FROM outbox_lanes) SELECT n.lane, coalesce(w.backlog, 0) AS backlog, o.payload::json->>''at'' AS oldest_at, coalesce(d.dead, 0) AS dead, l.leased_by, l.leased_until FROM named n LEFT JOIN work w ON w.lane = n.lane LEFT JOIN dead d ON d.lane = n.lane LEFT JOIN outbox o ON o.id = w.oldest_id LEFT JOIN outbox_lanes l ON l.lane = n.lane ORDER BY n.lane'
\set deadlist 'SELECT o.id, o.lane, o.kind, o.payload::json->>''type'' AS event, o.plan_id, p.document::json->>''title'' AS title, o.attempts, o.last_error, o.dead_at FROM (SELECT * FROM outbox WHERE dead_at IS NOT NULL ORDER BY id DESC LIMIT 100) o LEFT JOIN plans p ON p.id = o.plan_id ORDER BY o.id DESC'
\echo '== lane health, as seeded (laneHealth)'
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) :health;
\echo '== dead deliveries, newest 100, as seeded (outboxVisibility)'
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) :deadlist;
INSERT INTO outbox (plan_id, kind, lane, payload, created_at, available_at)
SELECT md5('plan' || (i % 1000))::uuid, 'slack', 'slack:C0FLOODED', '{"type":"plan.seeded","at":"2026-01-01T00:00:00.000Z"}', now(), now()
FROM generate_series(1, :backlog) AS i;
INSERT INTO outbox (plan_id, kind, lane, payload, created_at, available_at, attempts, last_error, dead_at)
SELECT md5('plan' || i)::uuid, 'webhook', 'webhook:seed-agent', '{"type":"plan.seeded"}', now(), now(), 12, 'seeded failure', now()
FROM generate_series(1, :dead) AS i;
\echo '== lane health, with the backlog and dead rows piled on (laneHealth)'
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) :health;
\echo '== dead deliveries, newest 100, with the dead rows piled on (outboxVisibility)'
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) :deadlist;
ROLLBACK;
