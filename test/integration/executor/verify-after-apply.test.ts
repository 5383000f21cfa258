import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { z } from "zod";
import { previewHttpJson } from "../../../src/adapters/http-json.ts";
import { httpJsonAdapter } from "../../../src/adapters/http-json-adapter.ts";
import { createReadOnlyHttp } from "../../../src/adapters/read-only-http.ts";
import type { TargetConfig } from "../../../src/config/schema.ts";
import { JsonResourceServer } from "../../../src/demo/json-resource-server.ts";
import { executePlan } from "../../../src/executor/execute-plan.ts";
import { type Claim } from "../../../src/contract/executor-api.ts";
import { issueGrant } from "../../../src/grant/grant.ts";
import { fingerprint } from "../../../src/plan/fingerprint.ts";
import type { Json } from "../../../src/plan/json.ts";
import { Outcome } from "../../../src/plan/outcome.ts";
import { PlanDocument, type HttpJsonAction } from "../../../src/plan/schema.ts";
import { executionPorts } from "../../support/execution-ports.ts";
import { READ_TOKEN, targetConfig, testGrantKeys, WRITE_TOKEN } from "../../support/harness.ts";

/**
 * Verify after apply: after each write the executor re-reads the target and compares
 * it with the previewed after-state, and settles writes whose answer it cannot trust (no answer
 * within the timeout, a 2xx that breaks off or is not JSON) by that re-read. All against real
 * HTTP: the JSON resource server, and a front for it that answers writes the way a proxy or a
 * broken target does.
 */

const http = createReadOnlyHttp();
/** Generous: every read in this file has it too, and the machine is loaded; only one test waits it out. */
const TIMEOUT_MS = 3000;
let target: JsonResourceServer;
let front: Server;
/** What the front does with the next writes; GETs always pass through to the target. */
let frontWrites: "pass" | "html-after-writing" | "html-without-writing" | "break-off-after-writing" = "pass";
let targets: Record<string, TargetConfig>;

beforeAll(async () => {
  target = new JsonResourceServer({ readTokens: [READ_TOKEN], writeToken: WRITE_TOKEN });
  await target.start();
  front = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      void (async () => {
        const writing = req.method !== "GET" && req.method !== "HEAD";
        const forward = async () => {
          const headers = Object.fromEntries(
            Object.entries(req.headers).filter(([k]) => k !== "host" && k !== "content-length" && k !== "connection"),
          ) as Record<string, string>;
          return fetch(`${target.url}${req.url}`, { method: req.method, headers, ...(writing ? { body: Buffer.concat(chunks) } : {}) });
        };
        if (!writing || frontWrites === "pass") {
          const answer = await forward();
          const etag = answer.headers.get("etag");
          res.writeHead(answer.status, { "content-type": "application/json", ...(etag ? { etag } : {}) }).end(await answer.text());
          return;
        }
        if (frontWrites !== "html-without-writing") await forward();
        if (frontWrites === "break-off-after-writing") {
          res.writeHead(200, { "content-type": "application/json", "content-length": "200" });
          res.write('{"id": 1, "ema');
          setTimeout(() => res.destroy(), 50);
          return;
        }
        res.writeHead(200, { "content-type": "text/html" }).end("<html><body>Saved. Thank you!</body></html>");
      })();
    });
  });
  await new Promise<void>((resolve) => front.listen(0, "127.0.0.1", resolve));
  const frontUrl = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;
  const write = { headers: { Authorization: `Bearer ${WRITE_TOKEN}` } };
  targets = {
    crm: targetConfig(target.url, { write, timeoutMs: TIMEOUT_MS }),
    front: targetConfig(frontUrl, { write, timeoutMs: TIMEOUT_MS }),
  };
});

afterAll(async () => {
  front.closeAllConnections();
  await new Promise<void>((resolve) => front.close(() => resolve()));
  await target.stop();
});

beforeEach(() => {
  target.beforeAnswer = undefined;
  target.failWith = undefined;
  frontWrites = "pass";
});

let counter = 0;
function seed(body: Json): string {
  const path = `/v${++counter}/contact`;
  target.set(path, body);
  return path;
}

const merge = (path: string, body: Json, on = "crm"): z.output<typeof HttpJsonAction> => ({ kind: "http.json", target: on, path, op: "merge", body });

/** Previews as the server does, grants as an approval does, and executes as the executor does. */
async function run(actions: z.output<typeof HttpJsonAction>[]): Promise<Outcome> {
  const previews = [];
  for (const action of actions) previews.push(await previewHttpJson(http, targets[action.target]!, action));
  const doc = PlanDocument.parse({
    v: 1,
    id: randomUUID(),
    environment: "test",
    agent: "agent-test",
    title: "Verify after apply",
    actions: previews.map((p) => p.planned),
    policy: { approvers: ["U0ALICE"], requiredApprovals: 1, grantTtlSeconds: 600 },
    expiresAt: new Date(Date.now() + 900_000).toISOString(),
  });
  const keys = await testGrantKeys();
  const now = new Date();
  const { token } = await issueGrant(keys.signing, {
    planId: doc.id,
    planHash: fingerprint(doc),
    approvers: [{ user: "U0ALICE", via: "slack", at: now.toISOString() }],
    environment: "test",
    issuedAt: now,
    expiresAt: new Date(now.getTime() + 600_000),
  });
  const claim: Claim = {
    plan: doc,
    preview: { actions: previews.map((p) => p.preview) },
    grant: token,
    claimToken: randomUUID(),
    leaseExpiresAt: new Date(Date.now() + 60_000).toISOString(),
  };
  const outcome = await executePlan(claim, executionPorts(keys.verifying, targets));
  // What the executor reports must be a valid outcome for the server.
  expect(Outcome.parse(outcome)).toStrictEqual(outcome);
  return outcome;
}

const writesTo = (path: string) => target.writes().filter((r) => r.path === path);

describe("verify after apply: the re-read is compared with the preview over the changed fields", () => {
  it("a write that lands as previewed → applied, verified: true, one write and a re-read after it", async () => {
    const path = seed({ id: 1, email: "a@old.example", phone: "555" });
    const outcome = await run([merge(path, { email: "b@new.example", phone: null })]);
    expect(outcome).toStrictEqual({ status: "applied", actions: [{ index: 0, target: "crm", path, status: "applied", verified: true }] });
    const methods = target.requests.filter((r) => r.path === path).map((r) => r.method);
    expect(methods).toStrictEqual(["GET", "GET", "PATCH", "GET"]); // preview, revalidation, write, verification
  });

  it("a target that silently drops a field on write → still applied, verified: false with the path, expected and actual", async () => {
    const path = seed({ id: 2, name: "Ana", email: "a@old.example" });
    // The target answers 200 to the PATCH but stores the contact without the nickname it does not know.
    target.beforeAnswer = (req) => {
      if (req.method !== "PATCH") return;
      const { nickname: _dropped, ...kept } = target.get(path) as Record<string, Json>;
      target.set(path, kept);
    };
    const outcome = await run([merge(path, { email: "b@new.example", nickname: "Aninha" })]);
    expect(outcome).toStrictEqual({
      status: "applied",
      actions: [{ index: 0, target: "crm", path, status: "applied", verified: false, driftAfterApply: [{ path: "/nickname", expected: "Aninha" }] }],
    });
    expect(writesTo(path)).toHaveLength(1);
  });

  it("a target that rewrites a value → verified: false naming what it holds instead; later actions still run", async () => {
    const a = seed({ email: "a@old.example" });
    const b = seed({ email: "c@old.example" });
    target.beforeAnswer = (req) => {
      if (req.method === "PATCH" && req.path === a) target.set(a, { email: "B@NEW.EXAMPLE" });
    };
    const outcome = await run([merge(a, { email: "b@new.example" }), merge(b, { email: "d@new.example" })]);
    expect(outcome.status).toBe("applied");
    expect(outcome.actions).toStrictEqual([
      {
        index: 0,
        target: "crm",
        path: a,
        status: "applied",
        verified: false,
        driftAfterApply: [{ path: "/email", expected: "b@new.example", actual: "B@NEW.EXAMPLE" }],
      },
      { index: 1, target: "crm", path: b, status: "applied", verified: true },
    ]);
  });

  it("the re-read fails after a write → applied, verified: null, saying it could not re-read; nothing written twice", async () => {
    const path = seed({ email: "a@old.example" });
    target.beforeAnswer = (req) => {
      if (req.method === "PATCH") target.failWith = { status: 503, body: "maintenance" };
    };
    const outcome = await run([merge(path, { email: "b@new.example" })]);
    expect(outcome.status).toBe("applied");
    expect(outcome.actions).toStrictEqual([
      {
        index: 0,
        target: "crm",
        path,
        status: "applied",
        verified: null,
        detail: "could not re-read after the write: target 'crm' answered HTTP 503 for GET " + path,
      },
    ]);
    target.failWith = undefined;
    expect(target.get(path)).toStrictEqual({ email: "b@new.example" });
    expect(writesTo(path)).toHaveLength(1);
  });
});

describe("reconcile: a write whose answer cannot be trusted is settled by the re-read", () => {
  it("answered after the executor's timeout, but applied → applied and verified, not failed", async () => {
    const path = seed({ email: "a@old.example" });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    target.beforeAnswer = (req) => (req.method === "PATCH" ? held : undefined); // written, answer held past the timeout
    try {
      const outcome = await run([merge(path, { email: "b@new.example" })]);
      expect(outcome.status).toBe("applied");
      expect(outcome.actions).toHaveLength(1);
      expect(outcome.actions[0]).toMatchObject({ status: "applied", verified: true });
      expect(outcome.actions[0]!.detail).toBe(
        `PATCH ${path} on 'crm' got no answer (timed out after ${TIMEOUT_MS} ms); the write may or may not have happened; re-read after it: the target holds the change`,
      );
      expect(writesTo(path)).toHaveLength(1);
    } finally {
      release();
    }
  });

  it("given a deadline closer than timeoutMs, the request's timeout is cut to the time left; past it, nothing is sent (expired)", async () => {
    const path = seed({ email: "a@old.example" });
    const { planned } = await previewHttpJson(http, targets.crm!, merge(path, { email: "b@new.example" }));
    const writer = httpJsonAdapter().openWriter("crm", targets.crm!);
    expect(await writer.apply(planned, "k", performance.now() - 1)).toStrictEqual({
      status: "expired",
      detail: `merge ${path} on 'crm' was not sent: the deadline had passed`,
    });
    expect(writesTo(path)).toHaveLength(0);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    target.beforeAnswer = (req) => (req.method === "PATCH" ? held : undefined);
    try {
      const started = performance.now();
      const result = await writer.apply(planned, "k", started + 700);
      expect(result).toMatchObject({ status: "uncertain", detail: expect.stringMatching(/got no answer \(timed out after (6\d\d|700) ms\)/) });
      expect(performance.now() - started).toBeLessThan(TIMEOUT_MS);
    } finally {
      release();
    }
  });

  it("a 200 with a non-JSON body, and the write did happen → applied and verified", async () => {
    frontWrites = "html-after-writing";
    const path = seed({ email: "a@old.example" });
    const outcome = await run([merge(path, { email: "b@new.example" }, "front")]);
    expect(outcome.status).toBe("applied");
    expect(outcome.actions[0]).toMatchObject({ status: "applied", verified: true });
    expect(outcome.actions[0]!.detail).toMatch(
      /^PATCH \S+ on 'front' answered HTTP 200 with a body that is not JSON: <html>.*; re-read after it: the target holds the change$/,
    );
    expect(target.get(path)).toStrictEqual({ email: "b@new.example" });
  });

  it("a 200 with a non-JSON body, and nothing was written (a proxy's page) → failed, not trusted as applied; later actions not sent", async () => {
    frontWrites = "html-without-writing";
    const path = seed({ email: "a@old.example" });
    const next = seed({ email: "c@old.example" });
    const outcome = await run([merge(path, { email: "b@new.example" }, "front"), merge(next, { email: "d@new.example" }, "front")]);
    expect(outcome.status).toBe("failed");
    expect(outcome.partial).toBeUndefined();
    expect(outcome.actions).toStrictEqual([
      {
        index: 0,
        target: "front",
        path,
        status: "failed",
        verified: false,
        driftAfterApply: [{ path: "/email", expected: "b@new.example", actual: "a@old.example" }],
        detail: `PATCH ${path} on 'front' answered HTTP 200 with a body that is not JSON: <html><body>Saved. Thank you!</body></html>; re-read after it: the target does not hold the change`,
      },
      { index: 1, target: "front", path: next, status: "skipped" },
    ]);
    expect(outcome.reason).toBe(outcome.actions[0]!.detail);
    expect(target.writes().filter((r) => r.path === path || r.path === next)).toHaveLength(0);
  });

  it("the connection drops in the middle of a 200's body, after the write → applied and verified", async () => {
    frontWrites = "break-off-after-writing";
    const path = seed({ email: "a@old.example" });
    const outcome = await run([merge(path, { email: "b@new.example" }, "front")]);
    expect(outcome.status).toBe("applied");
    expect(outcome.actions[0]).toMatchObject({ status: "applied", verified: true });
    expect(outcome.actions[0]!.detail).toMatch(
      /^PATCH \S+ on 'front' answered HTTP 200, but the answer broke off \(.+\); re-read after it: the target holds the change$/,
    );
    expect(writesTo(path)).toHaveLength(1);
  });

  it("a non-JSON 200, and the target cannot be re-read → failed with verified: null, saying both; nothing trusted", async () => {
    frontWrites = "html-after-writing";
    const path = seed({ email: "a@old.example" });
    target.beforeAnswer = (req) => {
      if (req.method === "PATCH") target.failWith = { status: 503, body: "down" };
    };
    const outcome = await run([merge(path, { email: "b@new.example" }, "front")]);
    target.failWith = undefined;
    expect(outcome.status).toBe("failed");
    expect(outcome.actions).toStrictEqual([
      {
        index: 0,
        target: "front",
        path,
        status: "failed",
        verified: null,
        detail: `PATCH ${path} on 'front' answered HTTP 200 with a body that is not JSON: <html><body>Saved. Thank you!</body></html>; could not re-read after the write: target 'front' answered HTTP 503 for GET ${path}`,
      },
    ]);
  });

  it("a 204 with no body is the target's word: applied, and verified by the re-read", async () => {
    const path = seed({ id: 9 });
    const outcome = await run([{ kind: "http.json", target: "crm", path, op: "delete" }]);
    expect(outcome).toStrictEqual({ status: "applied", actions: [{ index: 0, target: "crm", path, status: "applied", verified: true }] });
  });
});
