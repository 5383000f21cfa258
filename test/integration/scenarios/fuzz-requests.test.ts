import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { plans } from "../../../src/store/schema.ts";
import { databaseKinds } from "../../support/databases.ts";
import { ADMIN_TOKEN, EXECUTOR_TOKEN, fuzzTarget, itAnswersFuzzedRequests, nest } from "../../support/fuzz-requests.ts";
import { mergeRequest } from "../../support/harness.ts";

/**
 * Hostile input against the real HTTP app (in process, through `app.fetch`): the regressions the
 * seeded fuzzer found, then a shorter seeded run (2 000 requests) that still sends every shape the fuzzer makes.
 * Whatever is sent, the answer is never a 5xx, no request reaches the target with the write token,
 * and no plan is stored from a request that should have been refused. The 10 000-request run is
 * test/slow/fuzz-requests.test.ts (`npm run test:slow`).
 */
/**
 * Every shape is sent within the first 250 requests; the last status the run checks for (422, a
 * preview that failed) first comes at request 306 on PGlite and 1 899 on PostgreSQL with this seed.
 */
const REQUESTS = 2_000;

describe.each(databaseKinds)("fuzzed requests against the HTTP app on $name", (kind) => {
  const t = fuzzTarget(kind);

  /** `contentType: null` sends no Content-Type at all (bytes, since a string body would get text/plain). */
  const agentPost = (body: string, contentType: string | null = "application/json") =>
    t.app.fetch(
      new Request(`${t.h.ctx.config.publicUrl}/v1/plans`, {
        method: "POST",
        headers: { authorization: `Bearer ${t.agentKey}`, ...(contentType !== null ? { "content-type": contentType } : {}) },
        body: contentType === null ? new TextEncoder().encode(body) : body,
      }),
    );
  const errorOf = async (res: Response) =>
    ((await res.json()) as { error: { code: string; message: string; issues?: { path: string; message: string }[] } }).error;

  it("seen on main: a plan sent without Content-Type: application/json → 415, nothing stored", async () => {
    const before = await t.h.database.db.$count(plans);
    for (const type of [null, "text/plain", "application/x-www-form-urlencoded", "application/jsonx"]) {
      const res = await agentPost(JSON.stringify(mergeRequest()), type);
      expect(res.status).toBe(415);
      expect(await errorOf(res)).toMatchObject({ code: "unsupported_media_type", message: expect.stringMatching(/Content-Type: application\/json/) });
    }
    expect((await agentPost(JSON.stringify(mergeRequest({ title: "charset is fine" })), "application/json; charset=utf-8")).status).toBe(201);
    expect(await t.h.database.db.$count(plans)).toBe(before + 1);
  });

  it.each(["12345678901234567890", "1.00000000000000000001", "1e400"])(
    "seen on main: the number %s in a request → 400 naming its JSON Pointer",
    async (token) => {
      const text = JSON.stringify(mergeRequest()).replace('"ana@new.example"', `{"n": [0, ${token}]}`);
      const res = await agentPost(text);
      expect(res.status).toBe(400);
      expect(await errorOf(res)).toMatchObject({
        code: "invalid_request",
        issues: [{ path: "/actions/0/body/email/n/1", message: expect.stringContaining(`the number ${token} cannot be held exactly`) }],
      });
    },
  );

  it.each<[string, string, string]>([
    ["a lone surrogate", '"Ana \\ud800"', "/actions/0/body/email"],
    ["a NUL", '"a\\u0000b"', "/actions/0/body/email"],
  ])("seen on main: %s in a body → 400 naming its JSON Pointer", async (_name, value, pointer) => {
    const res = await agentPost(JSON.stringify(mergeRequest()).replace('"ana@new.example"', value));
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toMatchObject({ code: "invalid_request", issues: [{ path: pointer }] });
  });

  it("seen on main: a NUL in idempotencyKey → 400, not a database error", async () => {
    const res = await agentPost(JSON.stringify(mergeRequest({ idempotencyKey: "k\u0000" })));
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toMatchObject({ code: "invalid_request", issues: [{ path: "/idempotencyKey" }] });
  });

  it("a body that is not UTF-8 → 400 invalid_json, not a silently replaced character", async () => {
    const bytes = Buffer.from(JSON.stringify(mergeRequest({ title: "Update XX" })), "utf8");
    bytes[bytes.indexOf("XX")] = 0xff;
    const res = await t.app.fetch(
      new Request(`${t.h.ctx.config.publicUrl}/v1/plans`, {
        method: "POST",
        headers: { authorization: `Bearer ${t.agentKey}`, "content-type": "application/json" },
        body: new Uint8Array(bytes),
      }),
    );
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toMatchObject({ code: "invalid_json", message: expect.stringMatching(/UTF-8/) });
  });

  it("seen on main: /plans/not-a-uuid/approve from a signed-in browser → 404, not 500", async () => {
    for (const id of ["not-a-uuid", "%00", "1e400"]) {
      const res = await t.app.fetch(
        new Request(`${t.h.ctx.config.publicUrl}/plans/${id}/approve`, {
          method: "POST",
          headers: { cookie: t.cookie, origin: t.h.ctx.config.publicUrl, "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ _csrf: t.csrf, hash: t.pendingHash }).toString(),
        }),
      );
      expect(res.status).toBe(404);
    }
  });

  // (A form cannot carry a lone surrogate: the browser and URLSearchParams send U+FFFD instead.)
  it("seen on main: a NUL in a reject reason (with the right hash) → refused, not a database error, plan still pending", async () => {
    for (const reason of ["not\u0000ok", "\u0000"]) {
      const res = await t.app.fetch(
        new Request(`${t.h.ctx.config.publicUrl}/plans/${t.pendingId}/reject`, {
          method: "POST",
          headers: { cookie: t.cookie, origin: t.h.ctx.config.publicUrl, "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ _csrf: t.csrf, hash: t.pendingHash, reason }).toString(),
        }),
      );
      expect(res.status).toBe(400);
      expect(await res.text()).toMatch(/reason/i);
    }
    const [pending] = await t.h.database.db.select({ status: plans.status }).from(plans).where(eq(plans.id, t.pendingId));
    expect(pending!.status).toBe("pending");
  });

  it("a form that cannot be parsed (broken multipart) → 400, not 500", async () => {
    const res = await t.app.fetch(
      new Request(`${t.h.ctx.config.publicUrl}/plans/${t.pendingId}/approve`, {
        method: "POST",
        headers: { cookie: t.cookie, origin: t.h.ctx.config.publicUrl, "content-type": "multipart/form-data; boundary=zz" },
        body: "_csrf=x",
      }),
    );
    expect(res.status).toBe(400);
  });

  it.each(["{nope", "", "[1,", '{"name": 1e400}'])("seen on main: invalid JSON %j to the admin API → 400", async (body) => {
    for (const route of ["/admin/agents", "/admin/login-links"]) {
      const res = await t.app.fetch(
        new Request(`${t.h.ctx.config.publicUrl}${route}`, {
          method: "POST",
          headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
          body,
        }),
      );
      expect(res.status).toBe(400);
      expect(["invalid_json", "invalid_request"]).toContain((await errorOf(res)).code);
    }
  });

  it("the admin API names what is wrong with a well-formed but wrong body", async () => {
    const res = await t.app.fetch(
      new Request(`${t.h.ctx.config.publicUrl}/admin/login-links`, {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ userId: 42 }),
      }),
    );
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toMatchObject({ code: "invalid_request", issues: [{ path: "/userId" }] });
  });

  it("seen on main: a report deeper than the nesting limit → 400 (permanent), and a NUL claim token → 409, never 500", async () => {
    const deep = {
      status: "stale",
      actions: [{ index: 0, target: "crm", path: "/c", status: "stale", changedSincePreview: [{ path: "/x", to: nest(40, "deep") }] }],
    };
    const report = (token: string, body: string) =>
      t.app.fetch(
        new Request(`${t.h.ctx.config.publicUrl}/v1/executor/claims/${token}/report`, {
          method: "POST",
          headers: { authorization: `Bearer ${EXECUTOR_TOKEN}`, "content-type": "application/json" },
          body,
        }),
      );
    const tooDeep = await report("some-token", JSON.stringify(deep));
    expect(tooDeep.status).toBe(400);
    expect(await errorOf(tooDeep)).toMatchObject({
      code: "invalid_request",
      issues: [{ path: expect.stringMatching(/^\/actions\/0\/changedSincePreview\/0\/to/) }],
    });
    expect((await report("%00", JSON.stringify({ status: "applied", actions: [] }))).status).toBe(409);
  });

  itAnswersFuzzedRequests(t, REQUESTS);
});
