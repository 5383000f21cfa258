import { randomBytes } from "node:crypto";
import { eq } from "drizzle-orm";
import { agents } from "../../store/schema.ts";
import { appendAudit } from "../records/audit.ts";
import { hashAgentKey, newAgentKey } from "./agent-keys.ts";
import type { ServiceContext } from "../context.ts";
import { ServiceError } from "../errors.ts";

export const AGENT_NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/;

/** Creates an agent and returns its API key, which exists nowhere else afterwards, and the secret its webhooks are signed with. */
export async function addAgent(
  ctx: Pick<ServiceContext, "database" | "clock">,
  input: { name: string },
): Promise<{ id: string; name: string; key: string; webhookSecret: string }> {
  const { name } = input;
  if (!AGENT_NAME.test(name)) {
    throw new ServiceError(
      "invalid_request",
      `agent name '${name}' is not valid: use 1-63 lower-case letters, digits, '.', '_' or '-', starting with a letter or digit`,
    );
  }
  const key = newAgentKey();
  const webhookSecret = "whsec_" + randomBytes(24).toString("base64url");
  const now = ctx.clock();
  return ctx.database.db.transaction(async (tx) => {
    const [existing] = await tx.select({ id: agents.id, revokedAt: agents.revokedAt }).from(agents).where(eq(agents.name, name));
    if (existing) {
      // A revoked agent keeps its name so its plans and audit events stay attributable to one agent.
      throw new ServiceError(
        "conflict",
        existing.revokedAt
          ? `an agent named '${name}' existed and was revoked; names are not reused, so pick another name`
          : `an agent named '${name}' already exists; revoke it first or pick another name`,
      );
    }
    const [row] = await tx
      .insert(agents)
      .values({ name, keyHash: hashAgentKey(key), webhookSecret, createdAt: now })
      .returning({ id: agents.id });
    await appendAudit(tx, { planId: null, type: "agent.added", actor: { type: "system", process: "cli" }, data: { agentId: row!.id, name }, at: now });
    return { id: row!.id, name, key, webhookSecret };
  });
}
