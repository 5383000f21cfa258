-- Seeds a database already migrated with a large history, to read the plan list, plan page,
-- outbox lease and reminder queries' plans at volume (see bench/scans/explain.sh):
--   :plans plans (default 1 000 000), one in 1 000 pending (spread over the whole history, so
--   most pending plans are older than the newest 100), one in 500 failed, the rest applied;
--   4 delivered outbox rows per plan, 1 in 1 000 plans with a dead-lettered row, and the
--   newest 1 000 plans with an undelivered row each, in 10 channel lanes.
-- Run: psql -v plans=1000000 -f bench/scans/seed.sql <database>
\if :{?plans}
\else
  \set plans 1000000
\endif
BEGIN;
-- Triggers off (as bench/seed.ts copies): plans_count_admission would update one
-- agent_admissions row a million times in one transaction; the bound is written once, below.
SET LOCAL session_replication_role = replica;
INSERT INTO agents (id, name, key_hash) VALUES ('00000000-0000-4000-8000-000000000001', 'seed-agent', 'seed-key-hash')
  ON CONFLICT DO NOTHING;
INSERT INTO plans (id, agent_id, hash, document, preview, status, expires_at, request_digest, created_at, updated_at)
SELECT md5('plan' || i)::uuid, '00000000-0000-4000-8000-000000000001', md5('hash' || i),
  '{"title":"seeded plan ' || i || '","onBehalfOf":"U0SEED","actions":[{"target":"crm","method":"PATCH","path":"/x/' || i || '","body":{"v":' || i || '}}],"policy":{"approvers":["U0SEED"],"requiredApprovals":1}}',
  '{"actions":[]}',
  (CASE WHEN i % 1000 = 7 THEN 'pending' WHEN i % 500 = 3 THEN 'failed' ELSE 'applied' END)::plan_status,
  -- Pending plans expire in the future, later for older ones (a long-lived request).
  CASE WHEN i % 1000 = 7 THEN now() + ((:plans - i) || ' seconds')::interval + interval '1 hour'
       ELSE now() - ((:plans - i) * interval '6 seconds') + interval '1 hour' END,
  md5('digest' || i),
  now() - ((:plans - i) * interval '6 seconds'),
  now() - ((:plans - i) * interval '6 seconds')
FROM generate_series(1, :plans) AS i;
INSERT INTO outbox (plan_id, kind, lane, payload, created_at, available_at, attempts, delivered_at)
SELECT md5('plan' || i)::uuid, k.kind, '', '{"type":"plan.seeded"}',
  now() - ((:plans - i) * interval '6 seconds'), now() - ((:plans - i) * interval '6 seconds'), 1,
  now() - ((:plans - i) * interval '6 seconds')
FROM generate_series(1, :plans) AS i, (VALUES ('slack.post'), ('slack.update'), ('webhook'), ('slack.thread')) AS k(kind)
ORDER BY i;
INSERT INTO outbox (plan_id, kind, lane, payload, created_at, available_at, attempts, last_error, dead_at)
SELECT md5('plan' || i)::uuid, 'webhook', 'webhook:seed-agent', '{"type":"plan.seeded"}', now(), now(), 12, 'seeded failure', now()
FROM generate_series(1, :plans, 1000) AS i;
-- Undelivered rows wait in 10 Slack channel lanes, 100 each.
INSERT INTO outbox (plan_id, kind, lane, payload, created_at, available_at)
SELECT md5('plan' || i)::uuid, 'slack', 'slack:C0SEED' || (i % 10), '{"type":"plan.seeded"}', now(), now() + interval '1 hour'
FROM generate_series(greatest(:plans - 999, 1), :plans) AS i;
DELETE FROM agent_admissions;
INSERT INTO agent_admissions (agent_id, slot, admitted) SELECT agent_id, 8, count(*) FROM plans GROUP BY agent_id;
COMMIT;
VACUUM ANALYZE plans;
VACUUM ANALYZE outbox;
