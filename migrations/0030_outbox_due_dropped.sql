-- outbox_due (0000) indexed undelivered rows by available_at alone. No statement reads rows by it
-- across lanes any more: a worker takes a lane's rows through outbox_lane_order, whose last column
-- is available_at. On a table without statistics yet (a fresh install taking a burst) the planner
-- still took a lane's rows through outbox_due, filtering out every other lane's backlog: the App
-- Home lane's take scanned ~2 600 queued Slack channel rows for 10–56 of its own, 2–4 ms a take
-- (auto_explain, intake bench, 2026-12-04). Every take and retry also had to update it.
DROP INDEX "outbox_due";
