import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Json } from "../plan/json.ts";
import { applyMergePatch } from "../plan/merge-patch.ts";

/** One request as the resource server saw it. */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** The status it was answered with, once answered. */
  answered?: number;
}

export interface JsonResourceServerOptions {
  /** Resources at start, by path. */
  seed?: Record<string, Json>;
  /** When set, GET needs one of these bearer tokens, and writes need `writeToken`. */
  readTokens?: string[];
  writeToken?: string;
  /** Resources with their versions, as `snapshot()` gave them; wins over `seed` for the same path. */
  state?: Record<string, { body: Json; version: number }>;
  /**
   * How long an idle connection is kept open (node:http's `keepAliveTimeout`, announced to
   * clients in `Keep-Alive: timeout=…`); node's default, 5 s, when unset.
   */
  keepAliveTimeoutMs?: number;
}

/**
 * A small JSON-over-REST API with ETags and If-Match, the shape of target the `http.json`
 * adapter speaks to. It backs the demo target of `countersign start`, and tests use it as a
 * real HTTP fake that records every request and can be made to misbehave.
 */
export class JsonResourceServer {
  readonly requests: RecordedRequest[] = [];
  private readonly docs = new Map<string, { body: Json; version: number }>();
  private server: Server | undefined;
  url = "";
  /** Answer every request with this status (a down or broken target), when set. */
  failWith: { status: number; body: string } | undefined;
  /** Omit the ETag header from answers. */
  omitEtag = false;
  /**
   * Called with each request before it is handled (after it is recorded); the request waits
   * for the returned promise. Tests use it to hold a request, or to change state under it.
   */
  beforeHandle: ((request: RecordedRequest) => Promise<void> | void) | undefined;
  /** Called after a request changed state and before it is answered; the answer waits for it (a reply lost in the network). */
  beforeAnswer: ((request: RecordedRequest) => Promise<void> | void) | undefined;

  constructor(private readonly options: JsonResourceServerOptions = {}) {
    for (const [path, body] of Object.entries(options.seed ?? {})) this.docs.set(path, { body, version: 1 });
    for (const [path, doc] of Object.entries(options.state ?? {})) this.docs.set(path, doc);
  }

  /** Every resource with its version, as `state` takes it back (the demo keeps it across restarts). */
  snapshot(): Record<string, { body: Json; version: number }> {
    return Object.fromEntries(this.docs);
  }

  async start(port = 0, hostname = "127.0.0.1"): Promise<string> {
    this.server = createServer((req, res) => {
      void this.handle(req).then(async ({ status, body, etag, recorded }) => {
        await this.beforeAnswer?.(recorded);
        const headers: Record<string, string> = { "content-type": "application/json" };
        if (etag && !this.omitEtag) headers.etag = etag;
        res.writeHead(status, headers).end(body === undefined ? "" : typeof body === "string" ? body : JSON.stringify(body));
      });
    });
    const server = this.server;
    if (this.options.keepAliveTimeoutMs !== undefined) server.keepAliveTimeout = this.options.keepAliveTimeoutMs;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, hostname, () => {
        server.off("error", reject);
        resolve();
      });
    });
    this.url = `http://${hostname}:${(this.server.address() as AddressInfo).port}`;
    return this.url;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  /** The resource as it is now, as a test or the demo sees it. */
  get(path: string): Json | undefined {
    return this.docs.get(path)?.body;
  }

  /** Changes a resource behind Countersign's back (someone else edited it). */
  set(path: string, body: Json): void {
    const current = this.docs.get(path);
    this.docs.set(path, { body, version: (current?.version ?? 0) + 1 });
  }

  writes(): RecordedRequest[] {
    return this.requests.filter((r) => r.method !== "GET" && r.method !== "HEAD");
  }

  etagOf(path: string): string | undefined {
    const doc = this.docs.get(path);
    return doc && etag(doc.body, doc.version);
  }

  private async handle(req: IncomingMessage): Promise<{ status: number; body?: Json | string; etag?: string; recorded: RecordedRequest }> {
    const body = await readBody(req);
    const recorded: RecordedRequest = { method: req.method ?? "GET", path: new URL(req.url ?? "/", "http://x").pathname, headers: { ...req.headers }, body };
    this.requests.push(recorded);
    await this.beforeHandle?.(recorded);
    const answer = this.answer(req, recorded);
    recorded.answered = answer.status;
    return { ...answer, recorded };
  }

  private answer(req: IncomingMessage, { method, path, body }: RecordedRequest): { status: number; body?: Json | string; etag?: string } {
    if (this.failWith) return { status: this.failWith.status, body: this.failWith.body };

    const auth = req.headers.authorization?.replace(/^Bearer\s+/i, "");
    const reading = method === "GET" || method === "HEAD";
    if (reading && this.options.readTokens && !this.options.readTokens.includes(auth ?? "") && auth !== this.options.writeToken) {
      return { status: 401, body: { error: "read token required" } };
    }
    if (!reading && this.options.writeToken && auth !== this.options.writeToken) {
      return { status: 403, body: { error: "write token required" } };
    }

    const current = this.docs.get(path);
    const currentTag = current && etag(current.body, current.version);
    if (reading) return current ? { status: 200, body: current.body, etag: currentTag! } : { status: 404, body: { error: "not found" } };

    const ifMatch = req.headers["if-match"];
    const ifNoneMatch = req.headers["if-none-match"];
    if (ifMatch !== undefined && ifMatch !== currentTag) return { status: 412, body: { error: "precondition failed", etag: currentTag ?? null } };
    if (ifNoneMatch === "*" && current) return { status: 412, body: { error: "already exists" } };

    if (method === "DELETE") {
      if (!current) return { status: 404, body: { error: "not found" } };
      this.docs.delete(path);
      return { status: 204 };
    }
    let parsed: Json;
    try {
      parsed = JSON.parse(body) as Json;
    } catch {
      return { status: 400, body: { error: "body is not JSON" } };
    }
    const next = method === "PATCH" ? applyMergePatch(current?.body ?? {}, parsed) : parsed;
    if (method === "PATCH" && !current) return { status: 404, body: { error: "not found" } };
    if (method !== "PATCH" && method !== "PUT") return { status: 405, body: { error: `${method} not allowed` } };
    const version = (current?.version ?? 0) + 1;
    this.docs.set(path, { body: next, version });
    return { status: current ? 200 : 201, body: next, etag: etag(next, version) };
  }
}

function etag(body: Json, version: number): string {
  return `"${version}-${createHash("sha256").update(JSON.stringify(body)).digest("hex").slice(0, 16)}"`;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}
