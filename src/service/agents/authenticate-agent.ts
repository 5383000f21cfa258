import { hashAgentKey } from "./agent-keys.ts";
import { readAgentByKeyWithUsage, type ReadUsage } from "./agent-limits.ts";
import type { ServiceContext } from "../context.ts";
import { ServiceError } from "../errors.ts";

export interface AgentIdentity {
  id: string;
  name: string;
}

/**
 * Every agent request asks this, so its text is made once and sent past the query builder
 * (drizzle built the same SELECT anew each time, ~30 µs of CPU per request).
 */
const AGENT_BY_KEY = "SELECT id, name FROM agents WHERE key_hash = $1 AND revoked_at IS NULL";

/** The agent a bearer key belongs to; revoked and unknown keys are refused alike. */
export async function authenticateAgent(ctx: Pick<ServiceContext, "database">, input: { authorization: string | undefined }): Promise<AgentIdentity> {
  const [agent] = await ctx.database.query<AgentIdentity>(AGENT_BY_KEY, [hashAgentKey(bearerKey(input.authorization))]);
  if (!agent) throw unknownKey();
  return { id: agent.id, name: agent.name };
}

/**
 * The same for a submit, with the agent's usage against its limits read in the same statement
 * (readAgentByKeyWithUsage): submitPlan judges it where it would have read it, so a submit's key
 * and limits cost one round trip to PostgreSQL instead of two (far from its limits; an agent near
 * them pays a second, for the counts).
 */
export async function authenticateAgentForSubmit(
  ctx: Pick<ServiceContext, "database" | "config" | "clock">,
  input: { authorization: string | undefined },
): Promise<{ agent: AgentIdentity; usage: ReadUsage }> {
  const found = await readAgentByKeyWithUsage(ctx, hashAgentKey(bearerKey(input.authorization)));
  if (!found) throw unknownKey();
  return { agent: found.agent, usage: found.read };
}

function bearerKey(authorization: string | undefined): string {
  const key = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "")?.[1];
  if (!key) throw new ServiceError("unauthorized", "send the agent key as 'Authorization: Bearer <key>' ('countersign agents add NAME' creates one)");
  return key;
}

const unknownKey = () => new ServiceError("unauthorized", "this agent key is unknown or revoked");
