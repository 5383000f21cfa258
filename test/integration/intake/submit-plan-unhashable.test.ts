import { eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { fingerprint } from "../../../src/plan/fingerprint.ts";
import type { Json } from "../../../src/plan/json.ts";
import { planView } from "../../../src/service/lifecycle/plan-view.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { plans } from "../../../src/store/schema.ts";
import { databaseKinds } from "../../support/databases.ts";
import { refusal } from "../../support/refusal.ts";
import type { HttpJsonServerTarget } from "../../../src/config/load.ts";
import { mergeRequest, withTargets } from "../../support/harness.ts";
import { useSubmitHarness } from "./submit-plan-setup.ts";

describe.each(databaseKinds)("submitPlan refuses what cannot be hashed or stored, on $name", (kind) => {
  const { h, planCount } = useSubmitHarness(kind);

  beforeAll(async () => {
    h.ctx.config.webhooks.allowedHosts = ["hooks.example.com"];
  });

  it.each<[string, Record<string, unknown>, string, RegExp]>([
    [
      "a lone surrogate in a body value",
      { actions: [{ kind: "http.json", target: "crm", path: "/contacts/1", op: "merge", body: { name: "Ana \uD800" } }] },
      "/actions/0/body/name",
      /lone UTF-16 surrogate/,
    ],
    ["a lone low surrogate in the title", { title: "Fix \uDC00 now" }, "/title", /lone UTF-16 surrogate/],
    ["a NUL in the idempotencyKey", { idempotencyKey: "key\u0000one" }, "/idempotencyKey", /NUL/],
    ["a NUL in the reason", { reason: "because\u0000" }, "/reason", /NUL/],
    [
      "a lone surrogate in a body key",
      { actions: [{ kind: "http.json", target: "crm", path: "/contacts/1", op: "merge", body: { ["e\uD83Dmail"]: "x" } }] },
      "/actions/0/body",
      /field name/,
    ],
  ])("%s → invalid_request naming the JSON Pointer, nothing stored, target never read", async (_name, overrides, pointer, why) => {
    const before = await planCount();
    const reads = h.target.requests.length;
    const err = await refusal(submitPlan(h.ctx, { agent: h.agent, request: mergeRequest(overrides) }));
    expect(err.code).toBe("invalid_request");
    expect(err.issues).toContainEqual({ path: pointer, message: expect.stringMatching(why) });
    expect(err.message).toContain(pointer);
    expect(await planCount()).toBe(before);
    expect(h.target.requests.length).toBe(reads);
  });

  it("a callbackUrl with credentials is refused (without echoing them), even for an allowed host", async () => {
    const before = await planCount();
    const err = await refusal(submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ callbackUrl: "https://bot:hunter2@hooks.example.com/cs" }) }));
    expect(err.code).toBe("invalid_request");
    expect(err.issues).toEqual([{ path: "/callbackUrl", message: expect.stringMatching(/credentials/) }]);
    expect(JSON.stringify({ message: err.message, issues: err.issues })).not.toContain("hunter2");
    expect(await planCount()).toBe(before);
    // The same URL without them is fine.
    expect((await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ callbackUrl: "https://hooks.example.com/cs" }) })).created).toBe(true);
  });

  it("a target document with a lone surrogate → preview_failed naming where, nothing stored", async () => {
    h.target.set("/contacts/9", { id: 9, name: "Zoë \uD800" });
    const before = await planCount();
    const err = await refusal(
      submitPlan(h.ctx, {
        agent: h.agent,
        request: mergeRequest({ actions: [{ kind: "http.json", target: "crm", path: "/contacts/9", op: "merge", body: { email: "z@example.com" } }] }),
      }),
    );
    expect(err.code).toBe("preview_failed");
    expect(err.message).toMatch(/cannot be hashed exactly: at \/name, the string contains a lone UTF-16 surrogate/);
    expect(await planCount()).toBe(before);
  });

  it("a target document nested deeper than hashing can follow → preview_failed naming where, nothing stored", async () => {
    let deep: Json = "bottom";
    for (let i = 0; i < 300; i++) deep = [deep];
    h.target.set("/contacts/deep", { id: 7, tree: deep });
    const before = await planCount();
    const err = await refusal(
      submitPlan(h.ctx, {
        agent: h.agent,
        request: mergeRequest({ actions: [{ kind: "http.json", target: "crm", path: "/contacts/deep", op: "merge", body: { email: "d@example.com" } }] }),
      }),
    );
    expect(err.code).toBe("preview_failed");
    expect(err.message).toMatch(/cannot be hashed exactly: at \/tree(\/0)+, it nests deeper than 256 levels/);
    expect(await planCount()).toBe(before);
  });

  it.each(["12345678901234567890", "1.00000000000000000001", "1e400"])(
    "a target document with the number %s → preview_failed, nothing stored",
    async (token) => {
      const before = await planCount();
      h.target.beforeHandle = (r) => {
        if (r.method === "GET" && r.path === "/contacts/1") h.target.failWith = { status: 200, body: `{"id": 1, "limits": [0, ${token}]}` };
      };
      try {
        const err = await refusal(submitPlan(h.ctx, { agent: h.agent, request: mergeRequest() }));
        expect(err.code).toBe("preview_failed");
        expect(err.message).toContain(`at /limits/1, the number ${token} cannot be held exactly`);
      } finally {
        h.target.beforeHandle = undefined;
        h.target.failWith = undefined;
      }
      expect(await planCount()).toBe(before);
    },
  );

  it("a target number spelled differently but with the same value (1.0, 1e2) is accepted and shown as that value", async () => {
    // The raw answer carries no ETag, so this test's target compares digests instead.
    const ctx = withTargets(h.ctx, { crm: { ...(h.ctx.config.targets.crm as HttpJsonServerTarget), precondition: "digest" } });
    h.target.beforeHandle = (r) => {
      if (r.method === "GET" && r.path === "/contacts/2") h.target.failWith = { status: 200, body: '{"id": 2.0, "score": 1e2, "tiny": 0.10}' };
    };
    try {
      const { plan } = await submitPlan(ctx, {
        agent: h.agent,
        request: mergeRequest({ actions: [{ kind: "http.json", target: "crm", path: "/contacts/2", op: "merge", body: { score: 101 } }] }),
      });
      expect(plan.preview.actions[0]!.before).toEqual({ id: 2, score: 100, tiny: 0.1 });
      expect(plan.preview.actions[0]!.changes).toEqual([{ path: "/score", from: 100, to: 101 }]);
    } finally {
      await ctx.close();
      h.target.beforeHandle = undefined;
      h.target.failWith = undefined;
    }
  });

  it("bidi controls reach the agent exactly but reviewers as visible markers", async () => {
    const { plan } = await submitPlan(h.ctx, {
      agent: h.agent,
      request: mergeRequest({
        title: "Pay \u202E01$\u202C to Ana",
        actions: [{ kind: "http.json", target: "crm", path: "/contacts/2", op: "merge", body: { note: "\u2066x\u2069" } }],
      }),
    });
    expect(plan.plan.title).toBe("Pay \u202E01$\u202C to Ana");
    expect(fingerprint(plan.plan)).toBe(plan.hash);
    const [row] = await h.database.db.select().from(plans).where(eq(plans.id, plan.id));
    const shown = await planView(h.database.db, h.ctx.config.publicUrl, row!, "reviewer", h.ctx.redaction);
    expect(shown.plan.title).toBe("Pay ⟨U+202E⟩01$⟨U+202C⟩ to Ana");
    expect(shown.preview.actions[0]!.after).toMatchObject({ note: "⟨U+2066⟩x⟨U+2069⟩" });
    expect(shown.preview.actions[0]!.changes).toContainEqual({ path: "/note", to: "⟨U+2066⟩x⟨U+2069⟩" });
    expect(JSON.stringify(shown)).not.toMatch(/[\u202A-\u202E\u2066-\u2069]/);
  });
});
