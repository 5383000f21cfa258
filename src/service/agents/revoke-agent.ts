import { and, eq, isNull } from "drizzle-orm";
import { agents } from "../../store/schema.ts";
import { appendAudit } from "../records/audit.ts";
import type { ServiceContext } from "../context.ts";
import { ServiceError } from "../errors.ts";

/** Revokes an agent's key at once; its plans stay, for the record. */
export async function revokeAgent(ctx: Pick<ServiceContext, "database" | "clock">, input: { name: string }): Promise<void> {
  const { name } = input;
  const now = ctx.clock();
  await ctx.database.db.transaction(async (tx) => {
    const [row] = await tx
      .update(agents)
      .set({ revokedAt: now })
      .where(and(eq(agents.name, name), isNull(agents.revokedAt)))
      .returning({ id: agents.id });
    if (!row) {
      const [exists] = await tx.select({ id: agents.id }).from(agents).where(eq(agents.name, name));
      throw exists
        ? new ServiceError("conflict", `agent '${name}' is already revoked`)
        : new ServiceError("not_found", `there is no agent named '${name}'; 'countersign agents list' shows them`);
    }
    await appendAudit(tx, { planId: null, type: "agent.revoked", actor: { type: "system", process: "cli" }, data: { agentId: row.id, name }, at: now });
  });
}
