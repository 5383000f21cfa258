-- The plan INSERT's admission guard (0013) no longer orders every submission of an agent, only
-- those near its limits. Each submission in flight (from the guard to its commit) holds one of
-- 8 slot locks of its agent, under the agent's gate held shared; so at most 7 others can commit
-- after its count without being seen. An agent whose count plus 8 is within both limits is
-- therefore admitted without waiting (it cannot end above them); one nearer takes the gate
-- exclusively, which waits for every submission in flight, and counts exactly.
-- The path is chosen by a count before any lock. A submission that chose the shared path and
-- finds itself near after its slot (more than a few plans committed in between, a burst at the
-- limit) cannot upgrade its lock without risking a deadlock; it is refused like one over the
-- limit, and the refusal (src/service/agent-limits.ts) tells it to retry at once.
-- Locks: gate (1414, agent), slots (1415..1422, agent), two-key space as in 0013.
CREATE OR REPLACE FUNCTION countersign_admit_plan(p_agent uuid, p_since timestamptz, p_per_minute integer, p_max_pending integer) RETURNS uuid
VOLATILE AS $$
DECLARE
  slots CONSTANT integer := 8;
  agent_key CONSTANT integer := hashtext(p_agent::text);
  n_recent integer;
  n_open integer;
  held boolean := false;
BEGIN
  SELECT count(*) INTO n_recent FROM (SELECT 1 FROM plans WHERE agent_id = p_agent AND created_at > p_since LIMIT p_per_minute) r;
  SELECT count(*) INTO n_open FROM (SELECT 1 FROM plans WHERE agent_id = p_agent AND status IN ('pending', 'approved') LIMIT p_max_pending) o;
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
    -- Counted again: the slot bounds who may be in flight unseen from here on, not before it.
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
