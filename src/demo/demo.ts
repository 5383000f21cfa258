import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { addAgent } from "../service/agents/index.ts";
import { authenticateAgent } from "../service/agents/index.ts";
import type { ServiceContext } from "../service/context.ts";
import type { Json } from "../plan/json.ts";
import { JsonResourceServer } from "./json-resource-server.ts";
import { PG_DEMO_TARGET, postgresRowDemoTarget } from "./postgres-row-demo.ts";

export const DEMO_REVIEWER = "U0DEMOREVIEW";
export const DEMO_AGENT = "demo-agent";

const SEED = {
  "/contacts/1": { id: 1, name: "Ana Lima", email: "ana@old.example", phone: "+351 21 000 0001", tier: "gold" },
  "/contacts/2": { id: 2, name: "Bruno Costa", email: "bruno@example.com", phone: "+351 21 000 0002", tier: "silver" },
};

/** What the demo target keeps in the data dir, so a change that landed is still there to look at after a restart. */
interface DemoTargetFile {
  port: number;
  readToken: string;
  writeToken: string;
  state: Record<string, { body: Json; version: number }>;
}

export const DEMO_TARGET_FILE = "demo-target.json";

/**
 * The demo target: a contacts API with ETags, the kind of system an agent asks to change. Its
 * port, tokens and documents live in the data dir, so the URL and the curl line `start` prints
 * stay the same across restarts and an applied change can be looked at later.
 */
export async function startDemoTarget(dataDir: string): Promise<{ target: JsonResourceServer; readToken: string; writeToken: string }> {
  const file = path.join(dataDir, DEMO_TARGET_FILE);
  const saved = readSaved(file);
  const readToken = saved?.readToken ?? randomBytes(16).toString("hex");
  const writeToken = saved?.writeToken ?? randomBytes(16).toString("hex");
  const target = new JsonResourceServer({ seed: SEED, ...(saved ? { state: saved.state } : {}), readTokens: [readToken], writeToken });
  // Saved before the write is answered: once the executor hears "done", the change is on disk.
  target.beforeAnswer = (request) => {
    if (request.method !== "GET" && request.method !== "HEAD") save();
  };
  const save = () => {
    const port = Number(new URL(target.url).port);
    writeFileSync(file, JSON.stringify({ port, readToken, writeToken, state: target.snapshot() } satisfies DemoTargetFile, null, 2), { mode: 0o600 });
  };
  // The last port again if it is free; otherwise any (the config and the printed lines follow).
  await target.start(saved?.port ?? 0).catch(() => target.start(0));
  mkdirSync(dataDir, { recursive: true });
  save();
  return { target, readToken, writeToken };
}

function readSaved(file: string): DemoTargetFile | undefined {
  if (!existsSync(file)) return undefined;
  try {
    const saved = JSON.parse(readFileSync(file, "utf8")) as DemoTargetFile;
    return typeof saved.readToken === "string" && typeof saved.writeToken === "string" && typeof saved.state === "object" ? saved : undefined;
  } catch {
    return undefined; // a damaged file: start the demo afresh rather than not at all
  }
}

/** A read-only look at the demo target, to see whether an approved change landed. */
export function demoLookCurl(targetUrl: string, readToken: string, resource = "/contacts/1"): string {
  return `curl -s ${targetUrl}${resource} -H 'Authorization: Bearer ${readToken}'`;
}

/**
 * The config `countersign start` runs on when there is no countersign.yml: the http.json
 * `contacts` target, and the postgres.row `crm` target when its database was provisioned.
 */
export function demoConfig(targetUrl: string, options: { rows?: boolean } = {}): Record<string, unknown> {
  return {
    environment: "demo",
    defaults: { approvers: [DEMO_REVIEWER], requiredApprovals: 1, ttl: { default: 900, max: 86_400 } },
    targets: {
      contacts: {
        adapter: "http.json",
        baseUrl: targetUrl,
        read: { headers: { Authorization: "Bearer ${COUNTERSIGN_DEMO_READ_TOKEN}" } },
        write: { headers: { Authorization: "Bearer ${COUNTERSIGN_DEMO_WRITE_TOKEN}" } },
        allow: { ops: ["merge", "create"], paths: ["/contacts/*"], maxActions: 5, maxBodyBytes: 4096 },
      },
      ...(options.rows ? { [PG_DEMO_TARGET]: postgresRowDemoTarget() } : {}),
    },
  };
}

/**
 * The demo agent's key, kept in the data dir for each database `start` has run on (the embedded
 * one, or a DATABASE_URL's), so that every `npm start` prints a working curl line whichever it
 * runs on. Only for the embedded demo: real agents' keys are shown once and never stored.
 */
export async function demoAgentKey(
  ctx: Pick<ServiceContext, "database" | "clock">,
  dataDir: string,
  database: { kind: "pglite" } | { kind: "postgres"; url: string },
): Promise<string | undefined> {
  const file = path.join(dataDir, demoAgentKeyFile(database));
  if (existsSync(file)) {
    const key = readFileSync(file, "utf8").trim();
    const valid = await authenticateAgent(ctx, { authorization: `Bearer ${key}` }).then(
      () => true,
      () => false,
    );
    if (valid) return key;
  }
  // A database without the demo agent (new, or emptied) gets one; where the agent is there and
  // its key is not in this file, the key is lost.
  const { key } = await addAgent(ctx, { name: DEMO_AGENT }).catch(() => ({ key: undefined }));
  if (key) writeFileSync(file, key + "\n", { mode: 0o600 });
  return key;
}

/** The embedded database's file, or one per PostgreSQL database (its host, port and name: the same whatever user or password reaches it). */
function demoAgentKeyFile(database: { kind: "pglite" } | { kind: "postgres"; url: string }): string {
  if (database.kind === "pglite") return "demo-agent.key";
  let where = database.url;
  try {
    const url = new URL(database.url);
    where = `${url.hostname}:${url.port || "5432"}${url.pathname}`;
  } catch {
    // A URL postgres.js reads but URL does not (several hosts): the whole of it names the database.
  }
  return `demo-agent.${createHash("sha256").update(where).digest("hex").slice(0, 12)}.key`;
}

export function demoCurl(apiUrl: string, key: string): string {
  const body = JSON.stringify({
    title: "Update the email of Ana Lima",
    reason: "Customer asked by phone, ticket 4411",
    onBehalfOf: "U0REQUESTER",
    actions: [{ kind: "http.json", target: "contacts", path: "/contacts/1", op: "merge", body: { email: "ana@new.example" } }],
  });
  return `curl -s ${apiUrl}/v1/plans -H 'Authorization: Bearer ${key}' -H 'Content-Type: application/json' -d '${body}'`;
}
