import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { Claim } from "../../../src/contract/executor-api.ts";
import { fingerprint } from "../../../src/plan/fingerprint.ts";
import type { PlanDocument, HttpJsonPlanned } from "../../../src/plan/schema.ts";
import type { ActionPreview } from "../../../src/contract/agent-api.ts";
import { waitFor } from "../../support/wait-for.ts";
import { claimOf, execute, grantFor, keys, mark, merge, otherKey, ports, propose, seed, target, useExecutorTarget, writesTo } from "./execute-plan-setup.ts";

useExecutorTarget();

describe("executePlan writes nothing on a bad grant or a plan that is not the one approved", () => {
  type Setup = { doc: PlanDocument; preview: { actions: ActionPreview[] } };
  const cases: [string, RegExp, (s: Setup) => Promise<Claim>][] = [
    ["grant for another environment (audience)", /aud/, async ({ doc, preview }) => claimOf(doc, preview, await grantFor(doc, { environment: "staging" }))],
    ["grant signed by another key", /unknown key/, async ({ doc, preview }) => claimOf(doc, preview, await grantFor(doc, {}, otherKey))],
    [
      "grant whose planHash was tampered with (payload re-encoded, signature kept)",
      /signature verification failed/,
      async (s) => {
        const altered = structuredClone(s.doc);
        (altered.actions[0] as HttpJsonPlanned).body = { email: "mallory@evil.example" };
        const [h, p, sig] = (await grantFor(s.doc)).split(".");
        const payload = JSON.parse(Buffer.from(p!, "base64url").toString()) as Record<string, unknown>;
        payload.planHash = fingerprint(altered);
        return claimOf(altered, s.preview, `${h}.${Buffer.from(JSON.stringify(payload)).toString("base64url")}.${sig}`);
      },
    ],
    [
      "plan document altered after approval (body changed, grant kept)",
      /altered after approval/,
      async (s) => {
        const grant = await grantFor(s.doc);
        const altered = structuredClone(s.doc);
        (altered.actions[0] as HttpJsonPlanned).body = { email: "mallory@evil.example" };
        return claimOf(altered, s.preview, grant);
      },
    ],
    [
      "plan document altered after approval (policy approvers changed, grant kept)",
      /altered after approval/,
      async (s) => {
        const grant = await grantFor(s.doc);
        const altered = structuredClone(s.doc);
        altered.policy.approvers = ["U0MALLORY"];
        return claimOf(altered, s.preview, grant);
      },
    ],
    [
      "grant for another plan id (sub) with this plan's hash",
      /grant is for plan/,
      async ({ doc, preview }) => claimOf(doc, preview, await grantFor(doc, { planId: randomUUID() })),
    ],
    [
      "preview after-state that does not match the approved digest",
      /preview of action 0 does not match/,
      async ({ doc, preview }) => {
        const forged = structuredClone(preview);
        forged.actions[0]!.after = { id: 1, name: "Ana Lima", email: "ana@old.example" };
        return claimOf(doc, forged, await grantFor(doc));
      },
    ],
    [
      "preview before-state that does not match the approved digest",
      /preview of action 0 does not match/,
      async ({ doc, preview }) => {
        const forged = structuredClone(preview);
        forged.actions[0]!.before = { id: 1, name: "Ana Lima", email: "ana@new.example" };
        return claimOf(doc, forged, await grantFor(doc));
      },
    ],
    ["preview missing", /preview of action 0 does not match/, async ({ doc }) => claimOf(doc, { actions: [] }, await grantFor(doc))],
    [
      "alg: none token with the right claims",
      /alg/i,
      async ({ doc, preview }) => {
        const [, p] = (await grantFor(doc)).split(".");
        const header = Buffer.from(JSON.stringify({ alg: "none", kid: keys.signing.kid, typ: "countersign-grant+jwt" })).toString("base64url");
        return claimOf(doc, preview, `${header}.${p}.`);
      },
    ],
  ];

  it.each(cases)("%s → failed, zero writes", async (_name, reason, makeClaim) => {
    const path = seed({ id: 1, name: "Ana Lima", email: "ana@old.example" });
    const setup = await propose([merge(path, { email: "ana@new.example" })]);
    const claim = await makeClaim(setup);
    const m = mark();

    const outcome = await execute(claim);

    expect(outcome.status).toBe("failed");
    expect(outcome.reason).toMatch(reason);
    expect(outcome.actions).toStrictEqual([{ index: 0, target: "crm", path, status: "skipped" }]);
    expect(writesTo([path], m)).toHaveLength(0);
    expect(target.get(path)).toStrictEqual({ id: 1, name: "Ana Lima", email: "ana@old.example" });
    // The same plan with a proper grant would have been written: the refusal is the grant's doing.
    const good = await execute(claimOf(setup.doc, setup.preview, await grantFor(setup.doc)));
    expect(good.status).toBe("applied");
    expect(writesTo([path], m)).toHaveLength(1);
  });

  it("a bad grant is refused and nothing is written, though the first action's read ran during the grant check", async () => {
    const path = seed({ v: 1 });
    const { doc, preview } = await propose([merge(path, { v: 2 }), merge(path, { v: 3 })]);
    const m = mark();
    const outcome = await execute(claimOf(doc, preview, await grantFor(doc, {}, otherKey)));
    expect(outcome.status).toBe("failed");
    expect(outcome.reason).toMatch(/grant/);
    expect(outcome.actions.map((a) => a.status)).toStrictEqual(["skipped", "skipped"]);
    // The read is sent before the grant is verified (it overlaps the check); it is the only request.
    await waitFor("the read sent during the grant check", () => target.requests.length > m);
    expect(target.requests.slice(m).map((r) => r.method)).toStrictEqual(["GET"]);
    expect(writesTo([path], m)).toHaveLength(0);
  });

  it("a bad grant with an action whose target is not configured reaches no target", async () => {
    const path = seed({ v: 1 });
    const { doc, preview } = await propose([merge(path, { v: 2 })]);
    const m = mark();
    const opened: string[] = [];
    const outcome = await execute(
      claimOf(doc, preview, await grantFor(doc, {}, otherKey)),
      ports({
        target: (name) => {
          opened.push(name);
          throw new Error("must not reach a target");
        },
      }),
    );
    expect(outcome.status).toBe("failed");
    expect(outcome.reason).toMatch(/grant/);
    expect(target.requests.length).toBe(m);
  });
});
