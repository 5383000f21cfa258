import { describe, expect, it } from "vitest";
import { fingerprint } from "../../../src/plan/fingerprint.ts";
import { ServiceError } from "../../../src/service/errors.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { databaseKinds } from "../../support/databases.ts";
import { refusal } from "../../support/refusal.ts";
import { mergeRequest, READ_TOKEN, targetConfig, WRITE_TOKEN } from "../../support/harness.ts";
import { useSubmitHarness } from "./submit-plan-setup.ts";

describe.each(databaseKinds)("submitPlan on $name", (kind) => {
  const { h, planCount } = useSubmitHarness(kind);
  /** Same database; crm plus a target nobody listens on. */
  const hDown = h.another({
    targets: (url) => ({ crm: targetConfig(url), down: targetConfig("http://127.0.0.1:1", { timeoutMs: 3000 }) }),
  });

  it("previews with GET requests carrying only the read credential", async () => {
    const from = h.target.requests.length;
    await submitPlan(h.ctx, {
      agent: h.agent,
      request: mergeRequest({
        title: "Touch two contacts",
        actions: [
          { kind: "http.json", target: "crm", path: "/contacts/1", op: "replace", body: { id: 1, name: "Ana" } },
          { kind: "http.json", target: "crm", path: "/contacts/2", op: "delete" },
          { kind: "http.json", target: "crm", path: "/contacts/3", op: "create", body: { id: 3 } },
        ],
      }),
    });
    const sent = h.target.requests.slice(from);
    expect(sent.map((r) => `${r.method} ${r.path}`).sort()).toEqual(["GET /contacts/1", "GET /contacts/2", "GET /contacts/3"]);
    for (const request of sent) {
      expect(request.method).toBe("GET");
      expect(request.headers.authorization).toBe(`Bearer ${READ_TOKEN}`);
      expect(request.body).toBe("");
      expect(JSON.stringify(request.headers)).not.toContain(WRITE_TOKEN);
    }
    expect(h.target.writes()).toEqual([]);
    // Nothing was deleted or created by the preview.
    expect(h.target.get("/contacts/2")).toBeDefined();
    expect(h.target.get("/contacts/3")).toBeUndefined();
  });

  it("previews a create on an absent path with the precondition {absent: true}", async () => {
    const body = { id: 7, name: "Carla Dias", email: "carla@example.com" };
    const { plan } = await submitPlan(h.ctx, {
      agent: h.agent,
      request: mergeRequest({
        title: "Create Carla",
        actions: [{ kind: "http.json", target: "crm", path: "/contacts/7", op: "create", body }],
      }),
    });
    expect(plan.status).toBe("pending");
    expect(plan.plan.actions[0]!.precondition).toEqual({ absent: true });
    expect(plan.plan.actions[0]!.beforeDigest).toBe(fingerprint(null));
    expect(plan.plan.actions[0]!.afterDigest).toBe(fingerprint(body));
    expect(plan.preview.actions[0]).toEqual({
      target: "crm",
      path: "/contacts/7",
      op: "create",
      before: null,
      after: body,
      version: null,
      precondition: "absent",
      changes: [{ path: "", to: body }],
    });
    expect(fingerprint(plan.plan)).toBe(plan.hash);
    expect(h.target.get("/contacts/7")).toBeUndefined();
  });

  it("refuses a create where a resource exists (preview_failed), storing nothing", async () => {
    const rows = await planCount();
    const err = await refusal(
      submitPlan(h.ctx, {
        agent: h.agent,
        request: mergeRequest({
          title: "Create over Ana",
          actions: [{ kind: "http.json", target: "crm", path: "/contacts/1", op: "create", body: { id: 1 } }],
        }),
      }),
    );
    expect(err.code).toBe("preview_failed");
    expect(err.issues).toEqual([expect.objectContaining({ path: "/actions/0" })]);
    expect(await planCount()).toBe(rows);
  });

  it("refuses a merge on a path the target does not have (404) with preview_failed, storing nothing", async () => {
    const rows = await planCount();
    const err = await refusal(
      submitPlan(h.ctx, {
        agent: h.agent,
        request: mergeRequest({
          title: "Update a ghost",
          actions: [{ kind: "http.json", target: "crm", path: "/contacts/404", op: "merge", body: { email: "x@example.com" } }],
        }),
      }),
    );
    expect(err.code).toBe("preview_failed");
    expect(err.details).toMatchObject({ target: "crm", path: "/contacts/404" });
    expect(await planCount()).toBe(rows);
  });

  it("refuses when the target answers 500, passing on the target's answer, storing nothing", async () => {
    const rows = await planCount();
    h.target.failWith = { status: 500, body: "database on fire" };
    let err: ServiceError;
    try {
      err = await refusal(submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: "While the target is down" }) }));
    } finally {
      h.target.failWith = undefined;
    }
    expect(err.code).toBe("preview_failed");
    expect(err.details).toMatchObject({ target: "crm", path: "/contacts/1", targetAnswer: { status: 500, body: "database on fire" } });
    expect(await planCount()).toBe(rows);
  });

  it("refuses a target that gives no ETag, storing nothing", async () => {
    const rows = await planCount();
    h.target.omitEtag = true;
    let err: ServiceError;
    try {
      err = await refusal(submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: "No ETag" }) }));
    } finally {
      h.target.omitEtag = false;
    }
    expect(err.code).toBe("preview_failed");
    expect(err.message).toMatch(/ETag/);
    expect(await planCount()).toBe(rows);
  });

  it("refuses a target that is unreachable, storing nothing", async () => {
    const rows = await planCount();
    const err = await refusal(
      submitPlan(hDown.ctx, {
        agent: hDown.agent,
        request: mergeRequest({
          title: "To a dead target",
          actions: [{ kind: "http.json", target: "down", path: "/contacts/1", op: "merge", body: { a: 1 } }],
        }),
      }),
    );
    expect(err.code).toBe("preview_failed");
    expect(err.details).toMatchObject({ target: "down", path: "/contacts/1" });
    expect(err.message).toMatch(/unreachable|did not answer/);
    expect(await planCount()).toBe(rows);
  });

  it("refuses a target whose body is not JSON, passing on what it said, storing nothing", async () => {
    h.target.set("/raw/1", "<html>not json</html>");
    const rows = await planCount();
    const err = await refusal(
      submitPlan(h.ctx, {
        agent: h.agent,
        request: mergeRequest({
          title: "Merge into HTML",
          actions: [{ kind: "http.json", target: "crm", path: "/raw/1", op: "merge", body: { a: 1 } }],
        }),
      }),
    );
    expect(err.code).toBe("preview_failed");
    expect(err.details).toMatchObject({ targetAnswer: { status: 200, body: "<html>not json</html>" } });
    expect(await planCount()).toBe(rows);
  });

  it("refuses when any one of several actions fails its preview, storing nothing", async () => {
    const rows = await planCount();
    const err = await refusal(
      submitPlan(h.ctx, {
        agent: h.agent,
        request: mergeRequest({
          title: "One good, one bad",
          actions: [
            { kind: "http.json", target: "crm", path: "/contacts/1", op: "merge", body: { a: 1 } },
            { kind: "http.json", target: "crm", path: "/contacts/405", op: "merge", body: { a: 1 } },
          ],
        }),
      }),
    );
    expect(err.code).toBe("preview_failed");
    expect(err.issues).toEqual([expect.objectContaining({ path: "/actions/1" })]);
    expect(await planCount()).toBe(rows);
  });
});
