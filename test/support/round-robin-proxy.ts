import http from "node:http";
import type { AddressInfo } from "node:net";

/** A request the proxy sent again to another replica, and why. */
export interface ProxyRetry {
  method: string;
  path: string;
  upstream: string;
  reason: string;
}

const CONNECTION_ERRORS = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE"]);
const IDEMPOTENT = new Set(["GET", "HEAD", "OPTIONS"]);
const ATTEMPTS = 40;

/**
 * The small load balancer in front of several `countersign serve` replicas in a test: each
 * request goes to the next replica in turn, and one the replica did not take goes to the next,
 * as nginx's `proxy_next_upstream error` does. Upstream connections are pooled, so a replica that
 * closes idle ones is met as a real proxy meets it. Retried, as Go's and Node's HTTP clients
 * retry: a refused connection; a pooled connection the replica closed before answering (it was
 * idle there); and a GET on any connection error. A POST whose fresh connection failed after it
 * was sent may have been taken, so it is answered 502, which tests count as a 5xx. Request
 * bodies are held (a retry resends them); answers are streamed through, live streams too.
 */
export class RoundRobinProxy {
  readonly retries: ProxyRetry[] = [];
  private next = 0;
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  private server: http.Server | undefined;

  constructor(private readonly upstreams: readonly string[]) {}

  async start(): Promise<string> {
    const server = http.createServer((request, response) => void this.forward(request, response));
    this.server = server;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.agent.destroy();
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async forward(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const headers: http.OutgoingHttpHeaders = { ...request.headers, "content-length": String(body.length) };
    delete headers.connection;
    delete headers["keep-alive"];
    delete headers["transfer-encoding"];
    for (let attempt = 1; ; attempt++) {
      const upstream = this.upstreams[this.next++ % this.upstreams.length]!;
      try {
        const answer = await this.send(upstream, request.method ?? "GET", request.url ?? "/", headers, body);
        const passed = { ...answer.headers };
        delete passed.connection;
        delete passed["keep-alive"];
        delete passed["transfer-encoding"];
        response.writeHead(answer.statusCode ?? 502, passed);
        answer.pipe(response);
        answer.on("error", () => response.destroy());
        response.on("close", () => answer.destroy());
        return;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code ?? "";
        const pooled = (err as { pooled?: boolean }).pooled === true;
        const method = request.method ?? "GET";
        const untaken = code === "ECONNREFUSED" || (CONNECTION_ERRORS.has(code) && (pooled || IDEMPOTENT.has(method)));
        if (!untaken || attempt >= ATTEMPTS) {
          response.writeHead(502, { "content-type": "text/plain" });
          response.end(`proxy: ${upstream} failed: ${(err as Error).message}`);
          return;
        }
        this.retries.push({ method, path: request.url ?? "/", upstream, reason: `${code}${pooled ? " on a pooled connection" : ""}` });
        // Every replica failed in a row (both restarting at once would be a test bug): give them a moment.
        if (attempt % this.upstreams.length === 0) await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  /** Resolves with the answer once its headers arrived; rejects if the connection failed before them. */
  private send(upstream: string, method: string, path: string, headers: http.OutgoingHttpHeaders, body: Buffer): Promise<http.IncomingMessage> {
    return new Promise((resolve, reject) => {
      const out = http.request(new URL(path, upstream), { method, headers, agent: this.agent }, resolve);
      out.on("error", (err) => reject(Object.assign(err, { pooled: out.reusedSocket })));
      out.end(body);
    });
  }
}
