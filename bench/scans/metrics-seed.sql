-- Audit events for the plans bench/scans/seed.sql made, as the product writes them, for
-- bench/metrics-scrape.ts: per applied plan plan.submitted, decision.approve (a person, web),
-- plan.approved 2 minutes later, plan.executing and plan.applied 30 s after; failed plans end in
-- plan.failed; pending ones have only plan.submitted. 4-5 M events in one transaction.
-- Run after seed.sql: psql -v plans=1000000 -f bench/scans/metrics-seed.sql <database>
\if :{?plans}
\else
  \set plans 1000000
\endif
BEGIN;
INSERT INTO audit_events (plan_id, type, actor, data, at, prev_hash, hash)
SELECT p.id, e.type, e.actor, '{}', p.created_at + e.after, md5(random()::text || p.id::text || e.type), md5(p.id::text || e.type)
FROM plans p
CROSS JOIN LATERAL (VALUES
  (1, 'plan.submitted', '{"type":"agent","agentId":"00000000-0000-4000-8000-000000000001","name":"seed-agent"}', interval '0'),
  (2, 'decision.approve', '{"type":"user","userId":"U0SEED","via":"web"}', interval '120 seconds'),
  (3, 'plan.approved', '{"type":"user","userId":"U0SEED","via":"web"}', interval '120 seconds'),
  (4, 'plan.executing', '{"type":"system","process":"executor"}', interval '140 seconds'),
  (5, CASE p.status WHEN 'failed' THEN 'plan.failed' ELSE 'plan.applied' END, '{"type":"system","process":"executor"}', interval '150 seconds')
) AS e(n, type, actor, after)
WHERE p.status <> 'pending' OR e.n = 1
ORDER BY p.created_at, e.n;
COMMIT;
VACUUM ANALYZE audit_events;
