import { pino } from "pino";
import { generateGrantKeys, loadSigningKey, loadVerifyingKeys, type SigningKey, type VerifyingKeys } from "../../src/grant/keys.ts";
import { createReadOnlyHttp } from "../../src/adapters/read-only-http.ts";
import { defaultRegistry } from "../../src/adapters/registry.ts";
import { openTargetReaders } from "../../src/adapters/target-readers.ts";
import type { Config } from "../../src/config/load.ts";
import { TargetConfig, type AnyTargetConfig } from "../../src/config/schema.ts";
import { JsonResourceServer } from "../../src/demo/json-resource-server.ts";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import type { AgentIdentity } from "../../src/service/agents/authenticate-agent.ts";
import type { ServiceContext } from "../../src/service/context.ts";
import { ListeningPlanSignals } from "../../src/service/records/plan-signals.ts";
import type { Database } from "../../src/store/db.ts";
import { redactionRules } from "../../src/policy/redact.ts";

export const READ_TOKEN = "read-token-123";
export const WRITE_TOKEN = "write-token-456";
export const APPROVERS = ["U0ALICE", "U0BOB", "U0CAROL"];

/** A clock tests move by hand. */
export class TestClock {
  constructor(public time = new Date("2026-12-02T12:00:00.000Z")) {}
  now = (): Date => new Date(this.time);
  advance(seconds: number): void {
    this.time = new Date(this.time.getTime() + seconds * 1000);
  }
}

export const silentLogger = pino({ level: "silent" });

let keys: Promise<{ signing: SigningKey; verifying: VerifyingKeys; publicPem: string; privatePem: string }> | undefined;
/** One grant key pair per test process: generating is cheap, but there is no need to repeat it. */
export function testGrantKeys(): Promise<{ signing: SigningKey; verifying: VerifyingKeys; publicPem: string; privatePem: string }> {
  keys ??= (async () => {
    const pair = await generateGrantKeys();
    return {
      signing: await loadSigningKey(pair.privatePem),
      verifying: await loadVerifyingKeys(pair.publicPem),
      publicPem: pair.publicPem,
      privatePem: pair.privatePem,
    };
  })();
  return keys;
}

export function targetConfig(baseUrl: string, overrides: Partial<Record<keyof TargetConfig, unknown>> = {}): TargetConfig {
  // Tests allow everything unless they say otherwise; the allowlist has tests of its own. Nor do
  // their servers watch targets unless they say so: a watcher's read at a random point
  // of its interval would land among the reads a test holds or counts (watch-targets.test.ts and
  // test/slow/watch-drift.test.ts watch on purpose).
  return TargetConfig.parse({
    adapter: "http.json",
    baseUrl,
    read: { headers: { Authorization: `Bearer ${READ_TOKEN}` } },
    allow: { ops: ["merge", "replace", "delete", "create"], paths: ["/**"] },
    watch: { intervalSeconds: 0 },
    ...overrides,
  });
}

export function testConfig(targets: Record<string, AnyTargetConfig>, defaults: Partial<Config["defaults"]> = {}): Config {
  return {
    environment: "test",
    port: 0,
    host: "127.0.0.1",
    publicUrl: "http://countersign.test",
    database: { kind: "pglite", dataDir: "/nonexistent" },
    dataDir: "/nonexistent",
    logLevel: "silent",
    slack: { enabled: false },
    defaults: {
      approvers: APPROVERS,
      requiredApprovals: 1,
      ttl: { default: 900, max: 86_400 },
      grantTtl: 600,
      reminders: [],
      risk: "low",
      batch: true,
      edits: true,
      delegation: true,
      ...defaults,
    },
    // No executor runs in most tests: their absence is announced only where a test asks for it.
    executor: { leaseSeconds: 60, expected: false },
    browser: { loginLinks: true },
    admins: [],
    // Port 9 (discard): the callbacks of tests that queue webhooks and never see them answered.
    webhooks: { allowedHosts: ["127.0.0.1:9"], agents: {} },
    redact: { fields: [] },
    // Out of reach of tests about something else (one agent may submit hundreds of plans within
    // a minute of the test clock); test/integration/agents/agent-limits.test.ts sets its own.
    limits: { plansPerMinute: 100_000, maxPending: 100_000, agents: {} },
    grantPrivateKeyPem: undefined,
    executorToken: undefined,
    targets,
    configPath: null,
  };
}

export interface Harness {
  ctx: ServiceContext;
  clock: TestClock;
  target: JsonResourceServer;
  agent: AgentIdentity;
  close(): Promise<void>;
}

/**
 * A service context on a real database, with a real HTTP target ("crm") seeded with contacts,
 * a hand-moved clock, and one agent.
 */
export async function openHarness(
  database: Database,
  options: { defaults?: Partial<Config["defaults"]>; targets?: (crmUrl: string) => Record<string, TargetConfig>; sinks?: string[] } = {},
): Promise<Harness> {
  const target = new JsonResourceServer({
    seed: {
      "/contacts/1": { id: 1, name: "Ana Lima", email: "ana@old.example" },
      "/contacts/2": { id: 2, name: "Bruno Costa", email: "bruno@example.com" },
    },
    readTokens: [READ_TOKEN],
    writeToken: WRITE_TOKEN,
  });
  await target.start();
  const clock = new TestClock();
  const signals = new ListeningPlanSignals(database);
  await signals.start();
  const config = testConfig(options.targets?.(target.url) ?? { crm: targetConfig(target.url) }, options.defaults);
  const http = createReadOnlyHttp();
  const ctx: ServiceContext = {
    database,
    config,
    http,
    targets: openTargetReaders(config.targets, defaultRegistry({ http })),
    clock: clock.now,
    logger: silentLogger,
    signals,
    sinks: options.sinks ?? [],
    grantKey: (await testGrantKeys()).signing,
    redaction: redactionRules(),
  };
  const { id, name } = await addAgent(ctx, { name: `agent-${Math.random().toString(36).slice(2, 10)}` });
  return {
    ctx,
    clock,
    target,
    agent: { id, name },
    async close() {
      await ctx.targets.close();
      await signals.stop();
      await target.stop();
    },
  };
}

/**
 * The harness's context with other targets, and readers opened for them (a server opens its
 * readers once, from its config, so changing `ctx.config.targets` alone reaches no target).
 * Close it when done.
 */
export function withTargets(ctx: ServiceContext, targets: ServiceContext["config"]["targets"]): ServiceContext & { close(): Promise<void> } {
  const readers = openTargetReaders(targets, defaultRegistry({ http: ctx.http }));
  return { ...ctx, config: { ...ctx.config, targets }, targets: readers, close: () => readers.close() };
}

/** A minimal valid plan request for the seeded target. */
export function mergeRequest(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    title: "Update Ana's email",
    reason: "Customer asked by phone, ticket 4411",
    actions: [{ kind: "http.json", target: "crm", path: "/contacts/1", op: "merge", body: { email: "ana@new.example" } }],
    onBehalfOf: "U0REQUESTER",
    ...overrides,
  };
}
