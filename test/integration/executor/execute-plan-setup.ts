import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, beforeEach, expect } from "vitest";
import type { z } from "zod";
import { previewHttpJson } from "../../../src/adapters/http-json.ts";
import { createReadOnlyHttp } from "../../../src/adapters/read-only-http.ts";
import type { TargetConfig } from "../../../src/config/schema.ts";
import { JsonResourceServer, type RecordedRequest } from "../../../src/demo/json-resource-server.ts";
import { executePlan, type ExecutionPorts } from "../../../src/executor/execute-plan.ts";
import { type Claim } from "../../../src/contract/executor-api.ts";
import { issueGrant, type GrantInput } from "../../../src/grant/grant.ts";
import { generateGrantKeys, loadSigningKey, type SigningKey, type VerifyingKeys } from "../../../src/grant/keys.ts";
import { fingerprint } from "../../../src/plan/fingerprint.ts";
import type { Json } from "../../../src/plan/json.ts";
import { Outcome } from "../../../src/plan/outcome.ts";
import { PlanDocument, type HttpJsonAction } from "../../../src/plan/schema.ts";
import { type ActionPreview } from "../../../src/contract/agent-api.ts";
import { executionPorts } from "../../support/execution-ports.ts";
import { READ_TOKEN, targetConfig, testGrantKeys, WRITE_TOKEN } from "../../support/harness.ts";

/*
 * What the executePlan files share: a real target (the JSON resource server) for the whole file,
 * grant keys, and plans built and granted the way the server builds them. A file calls
 * useExecutorTarget() once; the bindings below are live, set by its hooks.
 */

const http = createReadOnlyHttp();

export let target: JsonResourceServer;
export let keys: { signing: SigningKey; verifying: VerifyingKeys };
export let otherKey: SigningKey;
export let targets: Record<string, TargetConfig>;

/** Opens the target in the calling file's beforeAll and stops it in its afterAll. */
export function useExecutorTarget(): void {
  beforeAll(async () => {
    target = new JsonResourceServer({ readTokens: [READ_TOKEN], writeToken: WRITE_TOKEN });
    await target.start();
    targets = { crm: targetConfig(target.url, { write: { headers: { Authorization: `Bearer ${WRITE_TOKEN}` } } }) };
    keys = await testGrantKeys();
    otherKey = await loadSigningKey((await generateGrantKeys()).privatePem);
  });

  afterAll(async () => {
    await target.stop();
  });

  beforeEach(() => {
    target.beforeHandle = undefined;
    target.failWith = undefined;
  });
}

/** A path of its own for each test: the target lives for the whole file. */
let counter = 0;
type HttpJsonRequest = z.output<typeof HttpJsonAction>;

export const fresh = (name = "contacts"): string => `/t${++counter}/${name}`;

/** Seeds a resource and returns its path. */
export function seed(body: Json, name?: string): string {
  const path = fresh(name);
  target.set(path, body);
  return path;
}

export function merge(path: string, body: Json): HttpJsonRequest {
  return { kind: "http.json", target: "crm", path, op: "merge", body };
}

/** Builds the plan document and preview the way the server does: preview with read-only HTTP. */
export async function propose(
  actions: HttpJsonRequest[],
  previewTargets: Record<string, TargetConfig> = targets,
): Promise<{ doc: PlanDocument; preview: { actions: ActionPreview[] } }> {
  const previews = [];
  for (const action of actions) previews.push(await previewHttpJson(http, previewTargets[action.target]!, action));
  const doc = PlanDocument.parse({
    v: 1,
    id: randomUUID(),
    environment: "test",
    agent: "agent-test",
    title: "Executor test plan",
    actions: previews.map((p) => p.planned),
    policy: { approvers: ["U0ALICE", "U0BOB"], requiredApprovals: 1, grantTtlSeconds: 600 },
    expiresAt: new Date(Date.now() + 900_000).toISOString(),
  });
  return { doc, preview: { actions: previews.map((p) => p.preview) } };
}

export async function grantFor(doc: PlanDocument, overrides: Partial<GrantInput> = {}, signing: SigningKey = keys.signing): Promise<string> {
  const now = new Date();
  const { token } = await issueGrant(signing, {
    planId: doc.id,
    planHash: fingerprint(doc),
    approvers: [{ user: "U0ALICE", via: "slack", at: now.toISOString() }],
    environment: "test",
    issuedAt: now,
    expiresAt: new Date(now.getTime() + 600_000),
    ...overrides,
  });
  return token;
}

/** A claim as the server hands it out; a short lease makes the executor give up on transient errors sooner. */
export function claimOf(doc: PlanDocument, preview: { actions: ActionPreview[] }, grant: string, leaseMs = 60_000): Claim {
  return { plan: doc, preview, grant, claimToken: randomUUID(), leaseExpiresAt: new Date(Date.now() + leaseMs).toISOString() };
}

/** The targets opened through the built-in adapters, as runExecutor does (http.json holds nothing open). */
export function ports(overrides: Partial<ExecutionPorts> = {}, configured: Record<string, TargetConfig> = targets): ExecutionPorts {
  return { ...executionPorts(keys.verifying, configured), ...overrides };
}

/** Runs the executor and checks that what it reports is a valid outcome for the server. */
export async function execute(claim: Claim, p: ExecutionPorts = ports()): Promise<Outcome> {
  const outcome = await executePlan(claim, p);
  expect(Outcome.parse(outcome)).toStrictEqual(outcome);
  return outcome;
}

/** Every write the target received at these paths since `mark` (an index into target.requests). */
export function writesTo(paths: string[], mark = 0): RecordedRequest[] {
  return target.requests.slice(mark).filter((r) => r.method !== "GET" && r.method !== "HEAD" && paths.includes(r.path));
}

export const mark = (): number => target.requests.length;
