import { and, eq, isNull } from "drizzle-orm";
import { agents } from "../store/schema.ts";
import { hashAgentKey } from "./agent-keys.ts";
import type { ServiceContext } from "./context.ts";
import { ServiceError } from "./errors.ts";

export interface AgentIdentity {
  id: string;
  name: string;
}

/** The agent a bearer key belongs to; revoked and unknown keys are refused alike. */
export async function authenticateAgent(ctx: Pick<ServiceContext, "database">, input: { authorization: string | undefined }): Promise<AgentIdentity> {
  const key = /^Bearer\s+(\S+)\s*$/i.exec(input.authorization ?? "")?.[1];
  if (!key) throw new ServiceError("unauthorized", "send the agent key as 'Authorization: Bearer <key>' ('countersign agents add NAME' creates one)");
  const [agent] = await ctx.database.db
    .select({ id: agents.id, name: agents.name })
    .from(agents)
    .where(and(eq(agents.keyHash, hashAgentKey(key)), isNull(agents.revokedAt)));
  if (!agent) throw new ServiceError("unauthorized", "this agent key is unknown or revoked");
  return agent;
}
