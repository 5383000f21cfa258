import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** A Web API call as the fake received it: its method and form parameters (blocks left as JSON text). */
export interface SlackCall {
  method: string;
  params: Record<string, string>;
  at: number;
}

/**
 * The few Web API methods the outbox's Slack sink calls (chat.postMessage, chat.update,
 * chat.getPermalink), over real HTTP, recording each call. `rateLimit(channel, seconds)` makes
 * posts to that channel answer 429 with that Retry-After, as Slack does when a channel is
 * flooded. Smaller than the full emulator on purpose: these tests are about the outbox.
 */
export class FakeSlackApi {
  readonly calls: SlackCall[] = [];
  private readonly limited = new Map<string, number>();
  private server: Server | undefined;
  private nextTs = 1_700_000_000;

  /** The base URL a WebClient takes as slackApiUrl. */
  url = "";

  rateLimit(channel: string, retryAfterSeconds: number): void {
    this.limited.set(channel, retryAfterSeconds);
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      let body = "";
      req.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
      req.on("end", () => {
        const method = (req.url ?? "").replace(/^\/api\//, "").split("?")[0]!;
        const params = Object.fromEntries(new URLSearchParams(body));
        this.calls.push({ method, params, at: Date.now() });
        const retryAfter = params.channel === undefined ? undefined : this.limited.get(params.channel);
        if (retryAfter !== undefined && method === "chat.postMessage") {
          res.writeHead(429, { "content-type": "application/json", "retry-after": String(retryAfter) });
          return res.end(JSON.stringify({ ok: false, error: "ratelimited" }));
        }
        const answer =
          method === "chat.postMessage"
            ? { ok: true, channel: params.channel, ts: `${this.nextTs++}.000100` }
            : method === "chat.update"
              ? { ok: true, channel: params.channel, ts: params.ts }
              : method === "chat.getPermalink"
                ? { ok: true, permalink: `https://slack.test/archives/${params.channel}/p${params.message_ts}` }
                : { ok: false, error: "unknown_method" };
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify(answer));
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/api/`;
  }

  /** Calls of a method, optionally to one channel. */
  callsOf(method: string, channel?: string): SlackCall[] {
    return this.calls.filter((c) => c.method === method && (channel === undefined || c.params.channel === channel));
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server?.closeAllConnections();
  }
}
