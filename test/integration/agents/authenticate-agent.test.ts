import { describe, expect, it } from "vitest";
import { addAgent } from "../../../src/service/agents/add-agent.ts";
import { authenticateAgent } from "../../../src/service/agents/authenticate-agent.ts";
import { ServiceError } from "../../../src/service/errors.ts";
import { revokeAgent } from "../../../src/service/agents/revoke-agent.ts";
import { databaseKinds } from "../../support/databases.ts";
import { useHarness } from "../../support/use-harness.ts";

/** The agent key lookup every agent request makes (one statement text, past the query builder). */
describe.each(databaseKinds)("authenticateAgent on $name", (kind) => {
  const h = useHarness(kind);

  const refusal = (authorization: string | undefined) =>
    authenticateAgent(h.ctx, { authorization }).then(
      () => undefined,
      (err: unknown) => err,
    );

  it("names the agent a key belongs to, with the header's spelling and spacing allowed", async () => {
    const added = await addAgent(h.ctx, { name: "auth-known" });
    expect(await authenticateAgent(h.ctx, { authorization: `Bearer ${added.key}` })).toEqual({ id: added.id, name: "auth-known" });
    expect(await authenticateAgent(h.ctx, { authorization: `bearer   ${added.key}  ` })).toEqual({ id: added.id, name: "auth-known" });
  });

  it("refuses a missing, malformed, unknown or revoked key alike, as unauthorized", async () => {
    const added = await addAgent(h.ctx, { name: "auth-revoked" });
    await revokeAgent(h.ctx, { name: "auth-revoked" });
    for (const authorization of [undefined, "", `Basic ${added.key}`, "Bearer", `Bearer ${added.key}x`, `Bearer ${added.key}`]) {
      const err = await refusal(authorization);
      expect(err, String(authorization)).toBeInstanceOf(ServiceError);
      expect((err as ServiceError).code).toBe("unauthorized");
    }
    // The key is the whole secret: another agent's key never names this one.
    const other = await addAgent(h.ctx, { name: "auth-other" });
    expect((await authenticateAgent(h.ctx, { authorization: `Bearer ${other.key}` })).name).toBe("auth-other");
  });
});
