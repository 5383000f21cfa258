-- The agent limits' counts (the usage read and the admission guard, 0013/0016/0024) walk every plan
-- of the agent in the minute and every open one, up to the limit: with limits far above use each
-- submission read all of them (four counts of ~1 000 index entries and heap tuples per plan once an
-- agent had 1 000 plans in the minute, 3 ms of PostgreSQL CPU). agent_admissions holds how many
-- plans each agent has ever stored, kept by a trigger on every INSERT into plans, so it also counts
-- plans written by hand or by an older release. That total is at least the plans in the minute and
-- at least the open plans: while it is 8 (the slots) or more below both limits, the guard admits
-- under its slot without counting, by exactly the argument that admitted by the counts (at most 7
-- others commit unseen after its read). Nearer, it counts as before. Rows are only incremented:
-- one per slot (0..7, the slot the submission holds, named by countersign.admit_slot; 8 without
-- the guard), so submissions of one agent never wait on one another's row. A purged plan stays
-- counted (the total is a bound, not a count). Copies made with triggers off
-- (session_replication_role = replica) must add their plans here themselves.
CREATE TABLE "agent_admissions" (
	"agent_id" uuid NOT NULL,
	"slot" smallint NOT NULL,
	"admitted" bigint NOT NULL,
	CONSTRAINT "agent_admissions_agent_id_slot_pk" PRIMARY KEY("agent_id","slot")
);
--> statement-breakpoint
CREATE FUNCTION countersign_count_admission() RETURNS trigger AS $$
BEGIN
  INSERT INTO agent_admissions (agent_id, slot, admitted)
    VALUES (NEW.agent_id, coalesce(nullif(current_setting('countersign.admit_slot', true), '')::smallint, 8), 1)
    ON CONFLICT (agent_id, slot) DO UPDATE SET admitted = agent_admissions.admitted + 1;
  RETURN NULL;
END;
$$ LANGUAGE plpgsql;
--> statement-breakpoint
CREATE TRIGGER plans_count_admission AFTER INSERT ON plans FOR EACH ROW EXECUTE FUNCTION countersign_count_admission();
--> statement-breakpoint
-- The plans already stored (the trigger's lock on plans keeps new ones out until this commits).
INSERT INTO agent_admissions (agent_id, slot, admitted) SELECT agent_id, 8, count(*) FROM plans GROUP BY agent_id;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION countersign_admit_plan(p_agent uuid, p_since timestamptz, p_per_minute integer, p_max_pending integer, p_recent integer, p_open integer) RETURNS uuid
VOLATILE AS $$
DECLARE
  slots CONSTANT integer := 8;
  agent_key CONSTANT integer := hashtext(p_agent::text);
  n_recent integer;
  n_open integer;
  n_admitted bigint;
  held integer;
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
        held := s;
        EXIT;
      END IF;
    END LOOP;
    IF held IS NULL THEN
      held := floor(random() * slots)::integer;
      PERFORM pg_advisory_xact_lock(1415 + held, agent_key);
    END IF;
    PERFORM set_config('countersign.admit_slot', held::text, true);
    -- Read under the slot: it bounds who may be in flight unseen from here on, not before it.
    SELECT coalesce(sum(admitted), 0) INTO n_admitted FROM agent_admissions WHERE agent_id = p_agent;
    IF n_admitted + slots <= p_per_minute AND n_admitted + slots <= p_max_pending THEN
      RETURN p_agent;
    END IF;
    SELECT count(*) INTO n_recent FROM (SELECT 1 FROM plans WHERE agent_id = p_agent AND created_at > p_since LIMIT p_per_minute) r;
    SELECT count(*) INTO n_open FROM (SELECT 1 FROM plans WHERE agent_id = p_agent AND status IN ('pending', 'approved') LIMIT p_max_pending) o;
    IF n_recent + slots <= p_per_minute AND n_open + slots <= p_max_pending THEN
      RETURN p_agent;
    END IF;
    RAISE EXCEPTION 'agent % came near its limits while submitting (% plans in the last minute of %, % open of %)', p_agent, n_recent, p_per_minute, n_open, p_max_pending
      USING ERRCODE = 'CSLIM';
  END IF;
  PERFORM pg_advisory_xact_lock(1414, agent_key);
  -- The gate held exclusively: no submission of the agent holds a slot, so slot 0's row is free.
  PERFORM set_config('countersign.admit_slot', '0', true);
  SELECT count(*) INTO n_recent FROM (SELECT 1 FROM plans WHERE agent_id = p_agent AND created_at > p_since LIMIT p_per_minute) r;
  SELECT count(*) INTO n_open FROM (SELECT 1 FROM plans WHERE agent_id = p_agent AND status IN ('pending', 'approved') LIMIT p_max_pending) o;
  IF n_recent >= p_per_minute OR n_open >= p_max_pending THEN
    RAISE EXCEPTION 'agent % is at its limits (% plans in the last minute of %, % open of %)', p_agent, n_recent, p_per_minute, n_open, p_max_pending
      USING ERRCODE = 'CSLIM';
  END IF;
  RETURN p_agent;
END;
$$ LANGUAGE plpgsql;
--> statement-breakpoint
-- The previous release's form (0016) counts before its lock, as this one does when told the counts
-- are at the limits; it now also names its slot, so its plans land in their slot's row.
CREATE OR REPLACE FUNCTION countersign_admit_plan(p_agent uuid, p_since timestamptz, p_per_minute integer, p_max_pending integer) RETURNS uuid
VOLATILE AS $$
BEGIN
  RETURN countersign_admit_plan(p_agent, p_since, p_per_minute, p_max_pending, p_per_minute, p_max_pending);
END;
$$ LANGUAGE plpgsql;
