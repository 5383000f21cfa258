import { eq } from "drizzle-orm";
import { pino } from "pino";
import { beforeAll, expect, it } from "vitest";
import { findUnfaithfulNumber } from "../../src/plan/faithful-json.ts";
import { findUnstorable } from "../../src/plan/storable.ts";
import { createApp } from "../../src/server/app.ts";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import { createLoginLink, sessionOf } from "../../src/service/sign-in/login-links.ts";
import { submitPlan } from "../../src/service/intake/submit-plan.ts";
import { plans } from "../../src/store/schema.ts";
import type { TestDatabaseKind } from "./databases.ts";
import { mergeRequest, WRITE_TOKEN } from "./harness.ts";
import { useHarness, type SuiteHarness } from "./use-harness.ts";

/**
 * Hostile input against the real HTTP app, from a fixed seed so a failure replays exactly.
 * test/integration/scenarios/fuzz-requests.test.ts runs the regressions found this way and a short run in
 * `npm test`; test/slow/fuzz-requests.test.ts runs the long one in `npm run test:slow`.
 */

const SEED = 0x5eed_c0de;
/**
 * CPU-bound: 10 000 requests took 45-60 s per database at load 2-5 on this 2-core machine, more
 * than 240 s on PGlite at load 8 beside the rest of the suite. A bound, reached only if the app hangs.
 */
const FUZZ_BOUND_MS = 900_000;

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

/**
 * Every shape the fuzzer can produce, by the name it records when it produces one: a run of any
 * length is checked to have sent each of them, so fewer requests still cover every shape.
 */
export const FUZZ_SHAPES: readonly string[] = [
  ...["agent-api", "plan-ids", "web-decisions", "web-pages", "executor-api", "admin-api"].map((l) => `lane:${l}`),
  ...["delete", "add-key", "replace"].map((m) => `mutation:${m}`),
  ...Array.from({ length: 9 }, (_, i) => `value:${i}`),
  ...Array.from({ length: 9 }, (_, i) => `raw-text:${i}`),
];

export class Fuzzer {
  /** The shapes produced so far (see FUZZ_SHAPES). */
  readonly shapes = new Set<string>();
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
    const shape = this.int(9);
    this.shapes.add(`value:${shape}`);
    switch (shape) {
      case 0:
        return this.hostileString();
      case 1:
        return this.pick([0, -1, 1.5, 2 ** 53, -(2 ** 31), 1e308, Number.MIN_VALUE]);
      case 2:
        return this.pick([null, true, false]);
      case 3:
        return [];
      case 4:
        return {};
      case 5:
        return nest(this.pick([10, 31, 32, 33, 200]), this.hostileString());
      case 6:
        return [this.hostileString(), { [this.hostileString()]: this.hostileString() }];
      case 7:
        return {
          kind: "http.json",
          target: this.hostileString(),
          path: this.hostileString(),
          op: this.pick(["merge", "replace", "delete", "create", "MERGE", "patch"]),
        };
      default:
        return Array.from({ length: this.pick([21, 100]) }, () => ({ ...mergeAction(), path: `/contacts/${this.int(1000)}` }));
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
    const how = this.int(5);
    this.shapes.add(`mutation:${how === 0 ? "delete" : how === 1 ? "add-key" : "replace"}`);
    switch (how) {
      case 0:
        delete (holder as Record<string, unknown>)[key as string];
        break;
      case 1:
        (holder as Record<string, unknown>)[this.pick(["extra", "__proto__", "constructor", "idempotencyKey", "callbackUrl", "ttlSeconds", "onBehalfOf"])] =
          this.hostileValue();
        break;
      default:
        (holder as Record<string | number, unknown>)[key] = this.hostileValue();
    }
  }

  /** Changes the text itself: numbers a double cannot hold, raw escapes, broken JSON, bad bytes. */
  rawText(text: string): string | Uint8Array {
    const shape = this.int(9);
    this.shapes.add(`raw-text:${shape}`);
    switch (shape) {
      case 0:
        return text.replace(
          /"(ana@new\.example)"/,
          this.pick(["12345678901234567890", "1.00000000000000000001", "1e400", "-1e400", "1e-400", "9007199254740993"]),
        );
      case 1:
        return text.replace(/"ana@new\.example"/, `{"n": ${this.pick(["1.0", "1e2", "-0", "0.10"])}}`);
      case 2:
        return text.replace(/Update/, this.pick(["\\ud800", "\\udfff", "\\u0000", "\\u202e"]));
      case 3:
        return text.slice(0, this.int(text.length));
      case 4:
        return text.replace(/\{/, this.pick(["{{", "[", "{,", '{"title":']));
      case 5:
        return "[".repeat(this.pick([100, 5000])) + "]".repeat(this.pick([0, 100, 5000]));
      case 6:
        return this.pick(["", "null", "[]", "0", '"str"', "true", "{}", " ", "\u0000", '{"a":1}garbage']);
      case 7: {
        const bytes = Buffer.from(text, "utf8");
        bytes[this.int(bytes.length)] = this.pick([0x00, 0x80, 0xc3, 0xed, 0xff]);
        return new Uint8Array(bytes);
      }
      default:
        return text.replace(/"op":"merge"/, `"op":"merge","x":${this.pick(["1e999", "12345678901234567890123", "0.1", "-"])}`);
    }
  }

  contentType(): string | undefined {
    if (this.chance(0.8)) return this.pick(["application/json", "application/json; charset=utf-8", "Application/JSON"]);
    return this.pick([
      undefined,
      "text/plain",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      "application/jsonx",
      "application/json-patch+json",
      "",
      "\u00ff",
    ]);
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

export function nest(levels: number, leaf: unknown): unknown {
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
  return (
    contentType?.split(";")[0]?.trim().toLowerCase() === "application/json" && findUnstorable(parsed).length === 0 && findUnfaithfulNumber(text) === undefined
  );
}

/** The app under fuzz, with an agent key, a pending plan and a signed-in browser session: filled in by beforeAll. */
export interface FuzzTarget {
  h: SuiteHarness;
  app: ReturnType<typeof createApp>;
  agentKey: string;
  pendingId: string;
  pendingHash: string;
  cookie: string;
  csrf: string;
  /** What the app logged as errors, so a 5xx names its cause in the failure. */
  serverErrors: string[];
}

export const ADMIN_TOKEN = "admin-token-for-fuzz";
export const EXECUTOR_TOKEN = "executor-token-for-fuzz";

/** The real HTTP app (in process, through `app.fetch`) on one database of `kind`; call inside a describe. */
export function fuzzTarget(kind: TestDatabaseKind): FuzzTarget {
  const t = { h: useHarness(kind), serverErrors: [] as string[] } as FuzzTarget;
  beforeAll(async () => {
    const { h } = t;
    const logger = pino({ level: "error" }, { write: (line: string) => void t.serverErrors.push(line.slice(0, 2000)) });
    t.app = createApp({ ...h.ctx, logger }, { adminToken: ADMIN_TOKEN, executorToken: EXECUTOR_TOKEN, loginLinks: true });
    t.agentKey = (await addAgent(h.ctx, { name: "fuzz-agent" })).key;
    const { plan } = await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: "A plan for the web routes to be fuzzed against" }) });
    t.pendingId = plan.id;
    t.pendingHash = plan.hash;
    const link = await createLoginLink(h.ctx, { userId: "U0ALICE", via: "cli" });
    const login = await t.app.fetch(new Request(link.url, { method: "POST", headers: { origin: h.ctx.config.publicUrl } }));
    expect(login.status, "signing in for the web fuzz").toBe(303);
    t.cookie = login.headers.get("set-cookie")!.split(";")[0]!;
    t.csrf = (await sessionOf(h.ctx, { sessionId: decodeURIComponent(t.cookie.slice(t.cookie.indexOf("=") + 1)) }))!.csrfToken;
  });
  return t;
}

/**
 * Registers the seeded run: `requests` mutated requests over every door, asserting no 5xx, no
 * write at the target, no plan stored from a request that should have been refused, and that the
 * run produced every shape in FUZZ_SHAPES and reached the deep checks (each status below).
 */
export function itAnswersFuzzedRequests(t: FuzzTarget, requests: number, bound = FUZZ_BOUND_MS): void {
  it(
    `answers ${requests} mutated requests without a 5xx, a write or a plan from invalid input`,
    async () => {
      const { h } = t;
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
        const res = await t.app.fetch(request);
        answered++;
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status >= 500) fiveHundreds.push(`${label.slice(0, 120)} → ${res.status} ${(await res.text()).slice(0, 200)}`);
        else {
          await onAnswer?.(res);
          await res.body?.cancel();
        }
      };

      for (let i = 0; sent < requests; i++) {
        const lane = fuzz.int(100);
        if (lane < 55) {
          fuzz.shapes.add("lane:agent-api");
          // The agent API's front door, with the body mutated as a value or as text.
          const text = JSON.stringify(fuzz.planRequest());
          const body = fuzz.chance(0.35) ? fuzz.rawText(text) : text;
          const contentType = fuzz.contentType();
          const headers: Record<string, string> = {
            authorization: `Bearer ${fuzz.chance(0.97) ? t.agentKey : fuzz.hostileString().replace(/[^\x20-\x7e]/g, "?")}`,
          };
          if (contentType !== undefined) headers["content-type"] = contentType;
          const payload = contentType === undefined && typeof body === "string" ? new TextEncoder().encode(body) : body;
          await send(`POST /v1/plans #${i}`, new Request(`${base}/v1/plans`, { method: "POST", headers, body: payload }), (res) => {
            if (res.status === 201) {
              created++;
              if (!acceptable(body, contentType)) wronglyCreated++;
            }
          });
        } else if (lane < 65) {
          fuzz.shapes.add("lane:plan-ids");
          const id = fuzz.oddId(t.pendingId);
          const path = fuzz.pick([
            `/v1/plans/${id}`,
            `/v1/plans/${id}/events`,
            `/v1/plans/${id}/cancel`,
            `/v1/plans/${id}/wait?timeout=${fuzz.pick(["0", "-1", "1e400", "abc", "%00", "9999"])}`,
          ]);
          const method = path.endsWith("/cancel") ? "POST" : "GET";
          // Cancelling the plan the web routes use would end their fuzzing early; other agents' ids are not ours anyway.
          if (method === "POST" && id === t.pendingId) continue;
          await send(`${method} ${path}`, new Request(`${base}${path}`, { method, headers: { authorization: `Bearer ${t.agentKey}` } }));
        } else if (lane < 82) {
          fuzz.shapes.add("lane:web-decisions");
          // The browser's decision routes: odd ids, odd forms, with and without a session and token.
          const id = fuzz.oddId(t.pendingId);
          const verdict = fuzz.pick(["approve", "reject"]);
          const form = new URLSearchParams();
          if (fuzz.chance(0.9)) form.set("_csrf", fuzz.chance(0.85) ? t.csrf : fuzz.hostileString());
          // A valid hash would let an approval through, which is not invalid input; fuzz everything else.
          form.set(
            "hash",
            fuzz.pick([t.pendingHash.slice(0, -1) + (t.pendingHash.endsWith("0") ? "1" : "0"), fuzz.hostileString(), "sha256:" + "0".repeat(64)]),
          );
          if (fuzz.chance(0.8)) form.set("reason", fuzz.hostileString());
          const headers: Record<string, string> = {
            "content-type": fuzz.pick(["application/x-www-form-urlencoded", "application/json", "multipart/form-data; boundary=zz", "text/plain"]),
          };
          if (fuzz.chance(0.9)) headers.origin = fuzz.chance(0.9) ? base : "https://evil.example";
          if (fuzz.chance(0.9))
            headers.cookie = fuzz.chance(0.9)
              ? t.cookie
              : `${t.cookie.slice(0, t.cookie.indexOf("="))}=${fuzz.pick(["%00", "%FF", "x".repeat(5000), "%E2%80%AE"])}`;
          const body = fuzz.chance(0.9) ? form.toString() : (fuzz.rawText(form.toString()) as string);
          await send(`POST /plans/${id}/${verdict}`, new Request(`${base}/plans/${id}/${verdict}`, { method: "POST", headers, body }));
        } else if (lane < 87) {
          fuzz.shapes.add("lane:web-pages");
          // The list renders every plan, so it is asked rarely: ids are where the odd input goes.
          const roll = fuzz.int(10);
          const odd = fuzz.oddId(t.pendingId);
          // A live stream stays open, so only ids that are not a plan go to it (they are answered at once).
          const path =
            roll < 7
              ? `/plans/${odd}`
              : roll < 8
                ? `/plans/${odd === t.pendingId ? "not-a-plan" : odd}/live`
                : roll < 9
                  ? `/login/${fuzz.oddId("token")}`
                  : `/plans?status=${fuzz.pick(["%00", "pending", "x".repeat(300), "%E2%80%AE"])}`;
          const method = path.startsWith("/login/") && fuzz.chance(0.5) ? "POST" : "GET";
          await send(`${method} ${path}`, new Request(`${base}${path}`, { method, headers: { cookie: t.cookie, origin: base } }));
        } else if (lane < 94) {
          fuzz.shapes.add("lane:executor-api");
          // The executor API: reports and heartbeats for claims that do not exist, with hostile outcomes.
          const token = fuzz.pick(["%00", "not-a-token", "x".repeat(100), "a", "%E2%80%AE", "..%2F"]);
          const isReport = fuzz.chance(0.7);
          const outcome = fuzz.pick([
            { status: "applied", actions: [] },
            {
              status: "stale",
              actions: [{ index: 0, target: "crm", path: "/c", status: "stale", changedSincePreview: [{ path: "/x", to: nest(40, "deep") }] }],
            },
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
          fuzz.shapes.add("lane:admin-api");
          // The admin API, which the CLI uses; never the fuzz agent's own name.
          const route = fuzz.pick(["/admin/agents", "/admin/login-links", `/admin/agents/${fuzz.oddId("nobody")}/revoke`]);
          const body =
            JSON.stringify(
              fuzz.pick([
                { name: fuzz.hostileString() },
                { userId: fuzz.hostileString() },
                { userId: "U0ALICE", name: fuzz.hostileString() },
                fuzz.hostileValue(),
              ]),
            ) ?? "null";
          await send(
            `POST ${route}`,
            new Request(`${base}${route}`, {
              method: "POST",
              headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
              body: fuzz.chance(0.4) ? fuzz.rawText(body) : body,
            }),
          );
        }
      }

      expect(fiveHundreds, `server log:\n${t.serverErrors.slice(0, 3).join("\n")}`).toEqual([]);
      // Every request sent was answered by the app (none threw), and there were at least REQUESTS of them.
      expect(answered).toBe(sent);
      expect(answered).toBeGreaterThanOrEqual(requests);
      expect([...statuses.values()].reduce((a, b) => a + b, 0)).toBe(answered);
      expect(wronglyCreated).toBe(0);
      expect(await h.database.db.$count(plans)).toBe(plansBefore + created);
      // Preview only ever reads; the write token never leaves the executor (which is not running).
      for (const request of h.target.requests) {
        expect(request.method).toBe("GET");
        expect(JSON.stringify(request.headers)).not.toContain(WRITE_TOKEN);
      }
      // The plan the web routes were fuzzed against was never decided by a request without its hash.
      const [pending] = await h.database.db.select({ status: plans.status }).from(plans).where(eq(plans.id, t.pendingId));
      expect(pending!.status).toBe("pending");
      // The mix reached the deep checks, not just the first refusal (so the run tests what it says).
      for (const status of [201, 400, 403, 404, 409, 413, 415, 422]) expect(statuses.get(status) ?? 0, `answers with HTTP ${status}`).toBeGreaterThan(0);
      expect(
        FUZZ_SHAPES.filter((shape) => !fuzz.shapes.has(shape)),
        "shapes this run never sent",
      ).toEqual([]);
    },
    bound,
  );
}
