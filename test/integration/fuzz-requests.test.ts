import { eq } from "drizzle-orm";
import { pino } from "pino";
import { beforeAll, describe, expect, it } from "vitest";
import { findUnfaithfulNumber } from "../../src/plan/faithful-json.ts";
import { findUnstorable } from "../../src/plan/storable.ts";
import { createApp } from "../../src/server/app.ts";
import { addAgent } from "../../src/service/add-agent.ts";
import { createLoginLink, sessionOf } from "../../src/service/login-links.ts";
import { submitPlan } from "../../src/service/submit-plan.ts";
import { plans } from "../../src/store/schema.ts";
import { databaseKinds } from "../support/databases.ts";
import { useHarness } from "../support/use-harness.ts";
import { mergeRequest, WRITE_TOKEN } from "../support/harness.ts";

/**
 * Hostile input against the real HTTP app (in process, through `app.fetch`), from a fixed seed so
 * a failure replays exactly. Whatever is sent, the answer is never a 5xx, no request reaches the
 * target with the write token, and no plan is stored from a request that should have been refused.
 */

const SEED = 0x5eed_c0de;
const REQUESTS = 10_000;
/**
 * CPU-bound: 45-60 s per database at load 2-5 on this 2-core machine, more than 240 s on PGlite
 * at load 8 beside the rest of the suite. A bound, reached only if the app hangs.
 */
const FUZZ_BOUND_MS = 900_000;
const ADMIN_TOKEN = "admin-token-for-fuzz";
const EXECUTOR_TOKEN = "executor-token-for-fuzz";

/** mulberry32: a tiny, well-known seeded PRNG, so the run is the same on every machine. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

class Fuzzer {
  private readonly next: () => number;
  constructor(seed: number) {
    this.next = mulberry32(seed);
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }

  /** Strings that break naive code: lone surrogates, NUL, bidi, mentions, markup, paths, long ones. */
  hostileString(): string {
    return this.pick([
      "\uD800",
      "lone \uDC00 low",
      "x\uD83D",
      "nul\u0000inside",
      "\u0000",
      "Pay \u202E01$\u202C now",
      "\u2066isolate\u2069",
      "\u200F\u061C\u200E",
      "<!channel> <@U0ALICE> *bold* `code`",
      "<script>alert(1)</script>",
      "../../etc/passwd",
      "%00%2e%2e",
      "",
      " ",
      "👩‍💻🇫🇷e\u0301",
      "\uFEFF\u200B",
      "a".repeat(this.pick([201, 4001, 70_000, 300_000])),
      "\\u0000",
      "U0ALICE",
      "S0GROUP",
      "crm",
      "/contacts/1",
    ]);
  }

  /** A value of any JSON type, sometimes deeply nested. */
  hostileValue(): unknown {
    switch (this.int(9)) {
      case 0: return this.hostileString();
      case 1: return this.pick([0, -1, 1.5, 2 ** 53, -(2 ** 31), 1e308, Number.MIN_VALUE]);
      case 2: return this.pick([null, true, false]);
      case 3: return [];
      case 4: return {};
      case 5: return nest(this.pick([10, 31, 32, 33, 200]), this.hostileString());
      case 6: return [this.hostileString(), { [this.hostileString()]: this.hostileString() }];
      case 7: return { kind: "http.json", target: this.hostileString(), path: this.hostileString(), op: this.pick(["merge", "replace", "delete", "create", "MERGE", "patch"]) };
      default: return Array.from({ length: this.pick([21, 100]) }, () => ({ ...mergeAction(), path: `/contacts/${this.int(1000)}` }));
    }
  }

  /** A plan request with one to three mutations of its structure. */
  planRequest(): unknown {
    const request = structuredClone(mergeRequest()) as Record<string, unknown>;
    for (let n = 1 + this.int(3); n > 0; n--) this.mutate(request);
    return request;
  }

  private mutate(root: Record<string, unknown>): void {
    const spots = containers(root);
    const { holder, key } = this.pick(spots);
    switch (this.int(5)) {
      case 0:
        delete (holder as Record<string, unknown>)[key as string];
        break;
      case 1:
        (holder as Record<string, unknown>)[this.pick(["extra", "__proto__", "constructor", "idempotencyKey", "callbackUrl", "ttlSeconds", "onBehalfOf"])] = this.hostileValue();
        break;
      default:
        (holder as Record<string | number, unknown>)[key] = this.hostileValue();
    }
  }

  /** Changes the text itself: numbers a double cannot hold, raw escapes, broken JSON, bad bytes. */
  rawText(text: string): string | Uint8Array {
    switch (this.int(9)) {
      case 0: return text.replace(/"(ana@new\.example)"/, this.pick(["12345678901234567890", "1.00000000000000000001", "1e400", "-1e400", "1e-400", "9007199254740993"]));
      case 1: return text.replace(/"ana@new\.example"/, `{"n": ${this.pick(["1.0", "1e2", "-0", "0.10"])}}`);
      case 2: return text.replace(/Update/, this.pick(["\\ud800", "\\udfff", "\\u0000", "\\u202e"]));
      case 3: return text.slice(0, this.int(text.length));
      case 4: return text.replace(/\{/, this.pick(["{{", "[", "{,", "{\"title\":"]));
      case 5: return "[".repeat(this.pick([100, 5000])) + "]".repeat(this.pick([0, 100, 5000]));
      case 6: return this.pick(["", "null", "[]", "0", "\"str\"", "true", "{}", " ", "\u0000", "{\"a\":1}garbage"]);
      case 7: {
        const bytes = Buffer.from(text, "utf8");
        bytes[this.int(bytes.length)] = this.pick([0x00, 0x80, 0xc3, 0xed, 0xff]);
        return new Uint8Array(bytes);
      }
      default: return text.replace(/"op":"merge"/, `"op":"merge","x":${this.pick(["1e999", "12345678901234567890123", "0.1", "-"])}`);
    }
  }

  contentType(): string | undefined {
    if (this.chance(0.8)) return this.pick(["application/json", "application/json; charset=utf-8", "Application/JSON"]);
    return this.pick([undefined, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonx", "application/json-patch+json", "", "\u00ff"]);
  }

  oddId(valid: string): string {
    return this.pick([
      "not-a-uuid",
      "%00",
      "%FF%FE",
      "%E2%80%AE",
      encodeURIComponent("\uD800".replace(/./, "x")) + "%ED%A0%80",
      "00000000-0000-0000-0000-000000000000",
      valid.toUpperCase(),
      `${valid}x`,
      valid.slice(0, 35),
      "x".repeat(5000),
      "..%2F..%2Fadmin",
      "%20",
      "1e400",
      "-1",
      valid,
    ]);
  }
}

function mergeAction(): Record<string, unknown> {
  return { kind: "http.json", target: "crm", path: "/contacts/1", op: "merge", body: { email: "ana@new.example" } };
}

function nest(levels: number, leaf: unknown): unknown {
  let value = leaf;
  for (let i = 0; i < levels; i++) value = i % 2 ? [value] : { d: value };
  return value;
}

/** Every (container, key) in a request, so a mutation can land anywhere in it. */
function containers(root: unknown): { holder: object; key: string | number }[] {
  const out: { holder: object; key: string | number }[] = [];
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v !== "object" || v === null) continue;
    for (const [k, child] of Object.entries(v)) {
      out.push({ holder: v, key: Array.isArray(v) ? Number(k) : k });
      stack.push(child);
    }
  }
  return out;
}

/** Whether a plan request the server accepted was one it should have: UTF-8, storable, faithful, sent as JSON. */
function acceptable(body: string | Uint8Array, contentType: string | undefined): boolean {
  let parsed: unknown;
  let text: string;
  try {
    text = typeof body === "string" ? body : new TextDecoder("utf-8", { fatal: true }).decode(body);
    parsed = JSON.parse(text);
  } catch {
    return false;
  }
  return contentType?.split(";")[0]!.trim().toLowerCase() === "application/json" && findUnstorable(parsed).length === 0 && findUnfaithfulNumber(text) === undefined;
}

describe.each(databaseKinds)("fuzzed requests against the HTTP app on $name", (kind) => {
  const h = useHarness(kind);
  let app: ReturnType<typeof createApp>;
  let agentKey: string;
  let pendingId: string;
  let pendingHash: string;
  let cookie: string;
  let csrf: string;
  const serverErrors: string[] = [];

  beforeAll(async () => {
    // Errors the app logs are kept, so a 5xx names its cause in the failure.
    const logger = pino({ level: "error" }, { write: (line: string) => void serverErrors.push(line.slice(0, 2000)) });
    app = createApp({ ...h.ctx, logger }, { adminToken: ADMIN_TOKEN, executorToken: EXECUTOR_TOKEN, loginLinks: true });
    agentKey = (await addAgent(h.ctx, { name: "fuzz-agent" })).key;
    const { plan } = await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: "A plan for the web routes to be fuzzed against" }) });
    pendingId = plan.id;
    pendingHash = plan.hash;
    const link = await createLoginLink(h.ctx, { userId: "U0ALICE", via: "cli" });
    const login = await app.fetch(new Request(link.url, { method: "POST", headers: { origin: h.ctx.config.publicUrl } }));
    expect(login.status, "signing in for the web fuzz").toBe(303);
    cookie = login.headers.get("set-cookie")!.split(";")[0]!;
    csrf = (await sessionOf(h.ctx, decodeURIComponent(cookie.slice(cookie.indexOf("=") + 1))))!.csrfToken;
  });

  /** `contentType: null` sends no Content-Type at all (bytes, since a string body would get text/plain). */
  const agentPost = (body: string, contentType: string | null = "application/json") =>
    app.fetch(new Request(`${h.ctx.config.publicUrl}/v1/plans`, { method: "POST", headers: { authorization: `Bearer ${agentKey}`, ...(contentType !== null ? { "content-type": contentType } : {}) }, body: contentType === null ? new TextEncoder().encode(body) : body }));
  const errorOf = async (res: Response) => ((await res.json()) as { error: { code: string; message: string; issues?: { path: string; message: string }[] } }).error;

  it("seen on main: a plan sent without Content-Type: application/json → 415, nothing stored", async () => {
    const before = await h.database.db.$count(plans);
    for (const type of [null, "text/plain", "application/x-www-form-urlencoded", "application/jsonx"]) {
      const res = await agentPost(JSON.stringify(mergeRequest()), type);
      expect(res.status).toBe(415);
      expect(await errorOf(res)).toMatchObject({ code: "unsupported_media_type", message: expect.stringMatching(/Content-Type: application\/json/) });
    }
    expect((await agentPost(JSON.stringify(mergeRequest({ title: "charset is fine" })), "application/json; charset=utf-8")).status).toBe(201);
    expect(await h.database.db.$count(plans)).toBe(before + 1);
  });

  it.each(["12345678901234567890", "1.00000000000000000001", "1e400"])("seen on main: the number %s in a request → 400 naming its JSON Pointer", async (token) => {
    const text = JSON.stringify(mergeRequest()).replace('"ana@new.example"', `{"n": [0, ${token}]}`);
    const res = await agentPost(text);
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toMatchObject({ code: "invalid_request", issues: [{ path: "/actions/0/body/email/n/1", message: expect.stringContaining(`the number ${token} cannot be held exactly`) }] });
  });

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
    const res = await app.fetch(new Request(`${h.ctx.config.publicUrl}/v1/plans`, { method: "POST", headers: { authorization: `Bearer ${agentKey}`, "content-type": "application/json" }, body: new Uint8Array(bytes) }));
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toMatchObject({ code: "invalid_json", message: expect.stringMatching(/UTF-8/) });
  });

  it("seen on main: /plans/not-a-uuid/approve from a signed-in browser → 404, not 500", async () => {
    for (const id of ["not-a-uuid", "%00", "1e400"]) {
      const res = await app.fetch(new Request(`${h.ctx.config.publicUrl}/plans/${id}/approve`, { method: "POST", headers: { cookie, origin: h.ctx.config.publicUrl, "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ _csrf: csrf, hash: pendingHash }).toString() }));
      expect(res.status).toBe(404);
    }
  });

  // (A form cannot carry a lone surrogate: the browser and URLSearchParams send U+FFFD instead.)
  it("seen on main: a NUL in a reject reason (with the right hash) → refused, not a database error, plan still pending", async () => {
    for (const reason of ["not\u0000ok", "\u0000"]) {
      const res = await app.fetch(new Request(`${h.ctx.config.publicUrl}/plans/${pendingId}/reject`, { method: "POST", headers: { cookie, origin: h.ctx.config.publicUrl, "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ _csrf: csrf, hash: pendingHash, reason }).toString() }));
      expect(res.status).toBe(400);
      expect(await res.text()).toMatch(/reason/i);
    }
    const [pending] = await h.database.db.select({ status: plans.status }).from(plans).where(eq(plans.id, pendingId));
    expect(pending!.status).toBe("pending");
  });

  it("a form that cannot be parsed (broken multipart) → 400, not 500", async () => {
    const res = await app.fetch(new Request(`${h.ctx.config.publicUrl}/plans/${pendingId}/approve`, { method: "POST", headers: { cookie, origin: h.ctx.config.publicUrl, "content-type": "multipart/form-data; boundary=zz" }, body: "_csrf=x" }));
    expect(res.status).toBe(400);
  });

  it.each(["{nope", "", "[1,", '{"name": 1e400}'])("seen on main: invalid JSON %j to the admin API → 400", async (body) => {
    for (const route of ["/admin/agents", "/admin/login-links"]) {
      const res = await app.fetch(new Request(`${h.ctx.config.publicUrl}${route}`, { method: "POST", headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" }, body }));
      expect(res.status).toBe(400);
      expect(["invalid_json", "invalid_request"]).toContain((await errorOf(res)).code);
    }
  });

  it("the admin API names what is wrong with a well-formed but wrong body", async () => {
    const res = await app.fetch(new Request(`${h.ctx.config.publicUrl}/admin/login-links`, { method: "POST", headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" }, body: JSON.stringify({ userId: 42 }) }));
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toMatchObject({ code: "invalid_request", issues: [{ path: "/userId" }] });
  });

  it("seen on main: a report deeper than the nesting limit → 400 (permanent), and a NUL claim token → 409, never 500", async () => {
    const deep = { status: "stale", actions: [{ index: 0, target: "crm", path: "/c", status: "stale", changedSincePreview: [{ path: "/x", to: nest(40, "deep") }] }] };
    const report = (token: string, body: string) => app.fetch(new Request(`${h.ctx.config.publicUrl}/v1/executor/claims/${token}/report`, { method: "POST", headers: { authorization: `Bearer ${EXECUTOR_TOKEN}`, "content-type": "application/json" }, body }));
    const tooDeep = await report("some-token", JSON.stringify(deep));
    expect(tooDeep.status).toBe(400);
    expect(await errorOf(tooDeep)).toMatchObject({ code: "invalid_request", issues: [{ path: expect.stringMatching(/^\/actions\/0\/changedSincePreview\/0\/to/) }] });
    expect((await report("%00", JSON.stringify({ status: "applied", actions: [] }))).status).toBe(409);
  });

  it(`answers ${REQUESTS} mutated requests without a 5xx, a write or a plan from invalid input`, async () => {
    const fuzz = new Fuzzer(SEED);
    const base = h.ctx.config.publicUrl;
    const statuses = new Map<number, number>();
    const fiveHundreds: string[] = [];
    let sent = 0;
    let answered = 0;
    let created = 0;
    let wronglyCreated = 0;
    const plansBefore = await h.database.db.$count(plans);

    const send = async (label: string, request: Request, onAnswer?: (res: Response) => void | Promise<void>) => {
      sent++;
      const res = await app.fetch(request);
      answered++;
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      if (res.status >= 500) fiveHundreds.push(`${label.slice(0, 120)} → ${res.status} ${(await res.text()).slice(0, 200)}`);
      else {
        await onAnswer?.(res);
        await res.body?.cancel();
      }
    };

    for (let i = 0; sent < REQUESTS; i++) {
      const lane = fuzz.int(100);
      if (lane < 55) {
        // The agent API's front door, with the body mutated as a value or as text.
        const text = JSON.stringify(fuzz.planRequest());
        const body = fuzz.chance(0.35) ? fuzz.rawText(text) : text;
        const contentType = fuzz.contentType();
        const headers: Record<string, string> = { authorization: `Bearer ${fuzz.chance(0.97) ? agentKey : fuzz.hostileString().replace(/[^\x20-\x7e]/g, "?")}` };
        if (contentType !== undefined) headers["content-type"] = contentType;
        const payload = contentType === undefined && typeof body === "string" ? new TextEncoder().encode(body) : body;
        await send(`POST /v1/plans #${i}`, new Request(`${base}/v1/plans`, { method: "POST", headers, body: payload }), (res) => {
          if (res.status === 201) {
            created++;
            if (!acceptable(body, contentType)) wronglyCreated++;
          }
        });
      } else if (lane < 65) {
        const id = fuzz.oddId(pendingId);
        const path = fuzz.pick([`/v1/plans/${id}`, `/v1/plans/${id}/events`, `/v1/plans/${id}/cancel`, `/v1/plans/${id}/wait?timeout=${fuzz.pick(["0", "-1", "1e400", "abc", "%00", "9999"])}`]);
        const method = path.endsWith("/cancel") ? "POST" : "GET";
        // Cancelling the plan the web routes use would end their fuzzing early; other agents' ids are not ours anyway.
        if (method === "POST" && id === pendingId) continue;
        await send(`${method} ${path}`, new Request(`${base}${path}`, { method, headers: { authorization: `Bearer ${agentKey}` } }));
      } else if (lane < 82) {
        // The browser's decision routes: odd ids, odd forms, with and without a session and token.
        const id = fuzz.oddId(pendingId);
        const verdict = fuzz.pick(["approve", "reject"]);
        const form = new URLSearchParams();
        if (fuzz.chance(0.9)) form.set("_csrf", fuzz.chance(0.85) ? csrf : fuzz.hostileString());
        // A valid hash would let an approval through, which is not invalid input; fuzz everything else.
        form.set("hash", fuzz.pick([pendingHash.slice(0, -1) + (pendingHash.endsWith("0") ? "1" : "0"), fuzz.hostileString(), "sha256:" + "0".repeat(64)]));
        if (fuzz.chance(0.8)) form.set("reason", fuzz.hostileString());
        const headers: Record<string, string> = { "content-type": fuzz.pick(["application/x-www-form-urlencoded", "application/json", "multipart/form-data; boundary=zz", "text/plain"]) };
        if (fuzz.chance(0.9)) headers.origin = fuzz.chance(0.9) ? base : "https://evil.example";
        if (fuzz.chance(0.9)) headers.cookie = fuzz.chance(0.9) ? cookie : `${cookie.slice(0, cookie.indexOf("="))}=${fuzz.pick(["%00", "%FF", "x".repeat(5000), "%E2%80%AE"])}`;
        const body = fuzz.chance(0.9) ? form.toString() : (fuzz.rawText(form.toString()) as string);
        await send(`POST /plans/${id}/${verdict}`, new Request(`${base}/plans/${id}/${verdict}`, { method: "POST", headers, body }));
      } else if (lane < 87) {
        // The list renders every plan, so it is asked rarely: ids are where the odd input goes.
        const roll = fuzz.int(10);
        const odd = fuzz.oddId(pendingId);
        // A live stream stays open, so only ids that are not a plan go to it (they are answered at once).
        const path = roll < 7 ? `/plans/${odd}` : roll < 8 ? `/plans/${odd === pendingId ? "not-a-plan" : odd}/live` : roll < 9 ? `/login/${fuzz.oddId("token")}` : `/plans?status=${fuzz.pick(["%00", "pending", "x".repeat(300), "%E2%80%AE"])}`;
        const method = path.startsWith("/login/") && fuzz.chance(0.5) ? "POST" : "GET";
        await send(`${method} ${path}`, new Request(`${base}${path}`, { method, headers: { cookie, origin: base } }));
      } else if (lane < 94) {
        // The executor API: reports and heartbeats for claims that do not exist, with hostile outcomes.
        const token = fuzz.pick(["%00", "not-a-token", "x".repeat(100), "a", "%E2%80%AE", "..%2F"]);
        const isReport = fuzz.chance(0.7);
        const outcome = fuzz.pick([
          { status: "applied", actions: [] },
          { status: "stale", actions: [{ index: 0, target: "crm", path: "/c", status: "stale", changedSincePreview: [{ path: "/x", to: nest(40, "deep") }] }] },
          { status: "failed", reason: fuzz.hostileString(), actions: [] },
          fuzz.hostileValue(),
        ]);
        const text = JSON.stringify(outcome) ?? "null";
        await send(
          `POST executor ${token}`,
          new Request(`${base}/v1/executor/claims/${token}/${isReport ? "report" : "heartbeat"}`, {
            method: "POST",
            headers: { authorization: `Bearer ${EXECUTOR_TOKEN}`, "content-type": "application/json" },
            ...(isReport ? { body: fuzz.chance(0.3) ? fuzz.rawText(text) : text } : {}),
          }),
        );
      } else {
        // The admin API, which the CLI uses; never the fuzz agent's own name.
        const route = fuzz.pick(["/admin/agents", "/admin/login-links", `/admin/agents/${fuzz.oddId("nobody")}/revoke`]);
        const body = JSON.stringify(fuzz.pick([{ name: fuzz.hostileString() }, { userId: fuzz.hostileString() }, { userId: "U0ALICE", name: fuzz.hostileString() }, fuzz.hostileValue()])) ?? "null";
        await send(`POST ${route}`, new Request(`${base}${route}`, { method: "POST", headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" }, body: fuzz.chance(0.4) ? fuzz.rawText(body) : body }));
      }
    }

    expect(fiveHundreds, `server log:\n${serverErrors.slice(0, 3).join("\n")}`).toEqual([]);
    // Every request sent was answered by the app (none threw), and there were at least REQUESTS of them.
    expect(answered).toBe(sent);
    expect(answered).toBeGreaterThanOrEqual(REQUESTS);
    expect([...statuses.values()].reduce((a, b) => a + b, 0)).toBe(answered);
    expect(wronglyCreated).toBe(0);
    expect(await h.database.db.$count(plans)).toBe(plansBefore + created);
    // Preview only ever reads; the write token never leaves the executor (which is not running).
    for (const request of h.target.requests) {
      expect(request.method).toBe("GET");
      expect(JSON.stringify(request.headers)).not.toContain(WRITE_TOKEN);
    }
    // The plan the web routes were fuzzed against was never decided by a request without its hash.
    const [pending] = await h.database.db.select({ status: plans.status }).from(plans).where(eq(plans.id, pendingId));
    expect(pending!.status).toBe("pending");
    // The mix reached the deep checks, not just the first refusal (so the run tests what it says).
    for (const status of [201, 400, 403, 404, 409, 413, 415, 422]) expect(statuses.get(status) ?? 0, `answers with HTTP ${status}`).toBeGreaterThan(0);
  }, FUZZ_BOUND_MS);
});
