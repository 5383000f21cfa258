import { sealAudit, type Seal } from "../../src/service/audit/seal-audit.ts";
import { verifyAudit } from "../../src/service/audit/verify-audit.ts";
import type { ServiceContext } from "../../src/service/context.ts";
import { waitFor } from "./wait-for.ts";

/**
 * Seals until no committed event is left unsealed; the seals written. A snapshot's xmin is the
 * whole PostgreSQL server's, so an open transaction in another database (test files run side
 * by side) may hold a seal back for a while, or cut it in two: tests never expect one seal.
 */
export async function sealAll(ctx: Pick<ServiceContext, "database" | "clock">, into: Seal[] = []): Promise<Seal[]> {
  await waitFor("every committed audit event to be sealed", async () => {
    into.push(...(await sealAudit(ctx)));
    return (await verifyAudit(ctx)).unsealed === 0;
  });
  return into;
}
