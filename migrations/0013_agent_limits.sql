-- Agent limits (issue 14): an agent's open plans are counted from this index alone.
CREATE INDEX "plans_agent_open" ON "plans" USING btree ("agent_id","status","expires_at") WHERE status IN ('pending', 'approved');--> statement-breakpoint
-- The admission guard of a plan's INSERT (src/service/agent-limits.ts, admitPlanGuard): called in
-- its VALUES, it returns the agent id to store, or raises CSLIM when the agent is at a limit.
-- The per-agent transaction lock orders one agent's concurrent submissions (held to their
-- commit); other agents never share it. Being VOLATILE, each count below takes a snapshot of its
-- own, after the lock: it sees every plan of the agent committed by the previous holder, which a
-- count in the INSERT's own statement (snapshot taken before the wait) would not.
-- (The two-key advisory lock space does not overlap the one-key locks of migration and audit.)
CREATE FUNCTION countersign_admit_plan(p_agent uuid, p_since timestamptz, p_per_minute integer, p_max_pending integer) RETURNS uuid
VOLATILE AS $$
DECLARE
  n_recent integer;
  n_open integer;
BEGIN
  PERFORM pg_advisory_xact_lock(1414, hashtext(p_agent::text));
  SELECT count(*) INTO n_recent FROM (SELECT 1 FROM plans WHERE agent_id = p_agent AND created_at > p_since LIMIT p_per_minute) r;
  SELECT count(*) INTO n_open FROM (SELECT 1 FROM plans WHERE agent_id = p_agent AND status IN ('pending', 'approved') LIMIT p_max_pending) o;
  IF n_recent >= p_per_minute OR n_open >= p_max_pending THEN
    RAISE EXCEPTION 'agent % is at its limits (% plans in the last minute of %, % open of %)', p_agent, n_recent, p_per_minute, n_open, p_max_pending
      USING ERRCODE = 'CSLIM';
  END IF;
  RETURN p_agent;
END;
$$ LANGUAGE plpgsql;
