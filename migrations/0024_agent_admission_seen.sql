-- The plan INSERT's admission guard (0016) counted the agent's plans twice: once before any lock,
-- only to choose its path, and again once it held its slot (or the gate). Each count walks up to
-- its limit of index entries, so with limits far above what an agent submits it read every plan
-- of the agent in the window and every open one, four counts per submission. The submission had
-- just read those counts (src/service/agent-limits.ts, readAgentUsage, one statement earlier, before
-- the preview): this form takes them as p_recent and p_open, and when they are far from both
-- limits (2 x 8 slots or more below) they choose the shared path without counting again; nearer,
-- it counts first as 0016 does. Either way the shared path counts under its slot and refuses
-- (Retry-After 1) when it finds itself near, and the exclusive path counts under the gate, so the
-- limits hold exactly as before: a stale count only chooses the path. The four-argument form
-- stays for replicas still running the previous release.
CREATE OR REPLACE FUNCTION countersign_admit_plan(p_agent uuid, p_since timestamptz, p_per_minute integer, p_max_pending integer, p_recent integer, p_open integer) RETURNS uuid
VOLATILE AS $$
DECLARE
  slots CONSTANT integer := 8;
  agent_key CONSTANT integer := hashtext(p_agent::text);
  n_recent integer;
  n_open integer;
  held boolean := false;
BEGIN
  IF p_recent + 2 * slots <= p_per_minute AND p_open + 2 * slots <= p_max_pending THEN
    n_recent := p_recent;
    n_open := p_open;
  ELSE
    SELECT count(*) INTO n_recent FROM (SELECT 1 FROM plans WHERE agent_id = p_agent AND created_at > p_since LIMIT p_per_minute) r;
    SELECT count(*) INTO n_open FROM (SELECT 1 FROM plans WHERE agent_id = p_agent AND status IN ('pending', 'approved') LIMIT p_max_pending) o;
  END IF;
  IF n_recent + slots <= p_per_minute AND n_open + slots <= p_max_pending THEN
    PERFORM pg_advisory_xact_lock_shared(1414, agent_key);
    FOR s IN 0 .. slots - 1 LOOP
      IF pg_try_advisory_xact_lock(1415 + s, agent_key) THEN
        held := true;
        EXIT;
      END IF;
    END LOOP;
    IF NOT held THEN
      PERFORM pg_advisory_xact_lock(1415 + floor(random() * slots)::integer, agent_key);
    END IF;
    -- Counted under the slot: it bounds who may be in flight unseen from here on, not before it.
    SELECT count(*) INTO n_recent FROM (SELECT 1 FROM plans WHERE agent_id = p_agent AND created_at > p_since LIMIT p_per_minute) r;
    SELECT count(*) INTO n_open FROM (SELECT 1 FROM plans WHERE agent_id = p_agent AND status IN ('pending', 'approved') LIMIT p_max_pending) o;
    IF n_recent + slots <= p_per_minute AND n_open + slots <= p_max_pending THEN
      RETURN p_agent;
    END IF;
    RAISE EXCEPTION 'agent % came near its limits while submitting (% plans in the last minute of %, % open of %)', p_agent, n_recent, p_per_minute, n_open, p_max_pending
      USING ERRCODE = 'CSLIM';
  END IF;
  PERFORM pg_advisory_xact_lock(1414, agent_key);
  SELECT count(*) INTO n_recent FROM (SELECT 1 FROM plans WHERE agent_id = p_agent AND created_at > p_since LIMIT p_per_minute) r;
  SELECT count(*) INTO n_open FROM (SELECT 1 FROM plans WHERE agent_id = p_agent AND status IN ('pending', 'approved') LIMIT p_max_pending) o;
  IF n_recent >= p_per_minute OR n_open >= p_max_pending THEN
    RAISE EXCEPTION 'agent % is at its limits (% plans in the last minute of %, % open of %)', p_agent, n_recent, p_per_minute, n_open, p_max_pending
      USING ERRCODE = 'CSLIM';
  END IF;
  RETURN p_agent;
END;
$$ LANGUAGE plpgsql;
