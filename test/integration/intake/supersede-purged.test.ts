import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { ServiceError } from "../../../src/service/errors.ts";
import { supersedeIn } from "../../../src/service/intake/supersede.ts";
import { databaseKinds } from "../../support/databases.ts";
import { useHarness } from "../../support/use-harness.ts";

describe.each(databaseKinds)("supersede of a plan purged meanwhile on $name", (kind) => {
  const h = useHarness(kind);

  it("is refused as not_supersedable naming the plan, not a TypeError", async () => {
    // What supersedeIn sees when retention purged the old plan between the early check and the transaction.
    const gone = randomUUID();
    const attempt = h.database.db.transaction((tx) =>
      supersedeIn(h.ctx, tx, {
        oldId: gone,
        next: { id: randomUUID(), hash: `sha256:${"0".repeat(64)}` },
        actor: { type: "agent", agentId: h.agent.id, name: h.agent.name },
      }),
    );
    const err = await attempt.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ServiceError);
    expect((err as ServiceError).code).toBe("not_supersedable");
    expect((err as ServiceError).message).toContain(`plan ${gone} was removed`);
    expect((err as ServiceError).details).toEqual({ planId: gone });
  });
});
