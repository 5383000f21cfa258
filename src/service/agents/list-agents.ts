import { asc } from "drizzle-orm";
import { agents } from "../../store/schema.ts";
import type { ServiceContext } from "../context.ts";

export interface AgentSummary {
  id: string;
  name: string;
  createdAt: string;
  revokedAt: string | null;
}

export async function listAgents(ctx: Pick<ServiceContext, "database">): Promise<AgentSummary[]> {
  const rows = await ctx.database.db.select().from(agents).orderBy(asc(agents.name));
  return rows.map((a) => ({ id: a.id, name: a.name, createdAt: a.createdAt.toISOString(), revokedAt: a.revokedAt?.toISOString() ?? null }));
}
