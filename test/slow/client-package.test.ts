import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import { signWebhook } from "../../src/webhooks/sign-webhook.ts";
import { pglite } from "../support/databases.ts";
import { useServer } from "../support/use-harness.ts";

/*
 * The client as it is published: compiled by tsconfig.client.json on its own, laid out as the
 * package's `exports` say, then compiled against by a strict consumer and run by plain `node`.
 */

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const TSC = path.join(ROOT, "node_modules/typescript/bin/tsc");
/** What a consumer's `package.json` would see: the `./client` entries of ours. */
const EXPORTS = (JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { exports: Record<string, unknown> }).exports;

/** Runs a command, failing with its output (tsc reports on stdout) rather than only its exit code. */
async function succeed(file: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv }): Promise<string> {
  try {
    return (await run(file, args, { ...options, timeout: 120_000 })).stdout;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${path.basename(file)} ${args.join(" ")} failed:\n${e.stdout ?? ""}${e.stderr ?? ""}\n${e.message}`);
  }
}

describe("the published client (countersign/client)", () => {
  const suite = useServer(pglite);
  /** Inside the repository, so the consumer resolves @openai/agents and zod from our node_modules. */
  let work: string;
  let built: string;

  beforeAll(async () => {
    mkdirSync(path.join(ROOT, "test-results"), { recursive: true });
    work = mkdtempSync(path.join(ROOT, "test-results", "client-package-"));
    const pkg = path.join(work, "pkg");
    built = path.join(pkg, "dist", "client");
    await succeed(process.execPath, [TSC, "-p", path.join(ROOT, "tsconfig.client.json"), "--outDir", built], { cwd: ROOT });
    writeFileSync(path.join(pkg, "package.json"), JSON.stringify({ name: "countersign", type: "module", exports: EXPORTS }));
    mkdirSync(path.join(work, "consumer", "node_modules"), { recursive: true });
    symlinkSync(pkg, path.join(work, "consumer", "node_modules", "countersign"), "dir");
  }, 180_000);
  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it("emits JavaScript and .d.ts that import nothing of the server, and types that name no zod", () => {
    const files = readdirSync(built).sort();
    expect(files).toEqual(
      expect.arrayContaining([
        "index.d.ts",
        "index.js",
        "openai-agents.d.ts",
        "openai-agents.js",
        "webhook-signature.d.ts",
        "webhook-signature.js",
        "wire-types.d.ts",
      ]),
    );
    for (const file of files) {
      const text = readFileSync(path.join(built, file), "utf8");
      const specifiers = [...text.matchAll(/\b(?:from|import)\s*\(?\s*["']([^"']+)["']/g)].map((m) => m[1]!);
      // Only siblings in dist/client, and the optional peer where the SDK adapter needs it.
      const allowed = file.startsWith("openai-agents.") ? /^(\.\/[\w-]+\.js|@openai\/agents|zod)$/ : /^\.\/[\w-]+\.js$/;
      expect({ file, outside: specifiers.filter((s) => !allowed.test(s)) }).toEqual({ file, outside: [] });
      if (!file.startsWith("openai-agents.")) expect({ file, zod: /\bzod\b/.test(text) }).toEqual({ file, zod: false });
    }
    // The wire types are inlined, not referred to: PlanView is spelled out in the client's own files.
    expect(readFileSync(path.join(built, "wire-types.d.ts"), "utf8")).toMatch(/export type PlanView = \{/);
    expect(readFileSync(path.join(built, "index.d.ts"), "utf8")).toContain('export type * from "./wire-types.js"');
  });

  it("compiles a strict consumer with skipLibCheck false, and the types are checked (not any)", async () => {
    const consumer = path.join(work, "consumer");
    writeFileSync(path.join(consumer, "package.json"), JSON.stringify({ name: "consumer", type: "module", private: true }));
    writeFileSync(
      path.join(consumer, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          skipLibCheck: false,
          module: "NodeNext",
          moduleResolution: "NodeNext",
          target: "ES2022",
          lib: ["ES2023", "DOM"],
          types: [],
          noEmit: true,
        },
        files: ["main.ts"],
      }),
    );
    writeFileSync(
      path.join(consumer, "main.ts"),
      `import { Countersign, CountersignError, verifyWebhook, type ErrorCode, type PlanView, type WebhookPayload } from "countersign/client";
import { countersignTool } from "countersign/client/openai-agents";
import { z } from "zod";

const client = new Countersign({ url: "http://localhost:3000", key: "csk_x" });
export const plan: Promise<PlanView> = client.submitPlan({ title: "t", actions: [{ kind: "http.json", target: "crm", path: "/contacts/1", op: "delete" }] });
export const row: Promise<PlanView> = client.submitPlan({ title: "t", actions: [{ kind: "postgres.row", target: "crmdb", table: "contacts", key: { id: 42 }, op: "update", values: { email: "ada@new.example" } }] });
export const rowTable = (p: PlanView) => p.plan.actions.map((a) => (a.kind === "postgres.row" ? a.table : a.path));
export const code: ErrorCode = "database_unavailable";
export const ok: Promise<boolean> = verifyWebhook("secret", "t=1,v1=00", "{}");
export const status = (p: WebhookPayload) => p.status satisfies PlanView["status"];
export const refused = (e: unknown) => e instanceof CountersignError && e.code === "not_a_reader";
export const tool = countersignTool({ client, name: "t", description: "d", parameters: z.object({ id: z.string() }), toPlan: (a) => ({ title: a.id, actions: [] }) });
// Each line below must be a type error; were the types any or missing, tsc would call the directive unused.
// @ts-expect-error an op the contract does not have
client.submitPlan({ title: "t", actions: [{ kind: "http.json", target: "crm", path: "/", op: "patch" }] });
// @ts-expect-error a postgres.row action names a table and key, not a path
client.submitPlan({ title: "t", actions: [{ kind: "postgres.row", target: "crmdb", path: "/contacts/42", op: "update" }] });
// @ts-expect-error a code the contract does not have
export const wrong: ErrorCode = "no_such_code";
// @ts-expect-error PlanView has no such field
export const field = (p: PlanView) => p.approvedBy;
`,
    );
    await succeed(process.execPath, [TSC, "-p", "."], { cwd: consumer });
  }, 180_000);

  it("runs in plain node (no tsx): submits, reads, cancels against a real server and checks a webhook", async () => {
    const { key, webhookSecret } = await addAgent(suite.server.ctx, { name: "package-agent" });
    const body = JSON.stringify({ planId: "p", status: "pending" });
    const header = signWebhook(webhookSecret, body, Math.floor(Date.now() / 1000));
    const script = path.join(work, "consumer", "run.mjs");
    writeFileSync(
      script,
      `import { Countersign, CountersignError, verifyWebhook } from "countersign/client";
const { URL: url, KEY: key, SECRET: secret, HEADER: header, BODY: body } = process.env;
const client = new Countersign({ url, key });
const plan = await client.submitPlan({ title: "From plain node", actions: [{ kind: "http.json", target: "crm", path: "/contacts/1", op: "merge", body: { email: "ana@new.example" } }] });
const read = await client.getPlan(plan.id);
const cancelled = await client.cancel(plan.id);
const events = (await client.events(plan.id)).map((e) => e.type);
const refusal = await client.getPlan("00000000-0000-4000-8000-000000000000").catch((e) => e instanceof CountersignError ? [e.code, e.status] : String(e));
const webhook = [await verifyWebhook(secret, header, body), await verifyWebhook(secret, header, body + " ")];
console.log(JSON.stringify({ status: plan.status, sameHash: read.hash === plan.hash, cancelled: cancelled.status, events, refusal, webhook }));
`,
    );
    // No loader: NODE_OPTIONS from the test runner could register one.
    const env = { PATH: process.env.PATH, URL: suite.server.url, KEY: key, SECRET: webhookSecret, HEADER: header, BODY: body };
    const out = await succeed(process.execPath, [script], { cwd: path.dirname(script), env });
    expect(JSON.parse(out)).toEqual({
      status: "pending",
      sameHash: true,
      cancelled: "cancelled",
      events: ["plan.submitted", "plan.cancelled"],
      refusal: ["not_found", 404],
      webhook: [true, false],
    });
  });
});
