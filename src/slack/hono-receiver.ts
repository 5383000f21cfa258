import type { App, Receiver, ReceiverEvent } from "@slack/bolt";
import type { Context } from "hono";
import type { Logger } from "pino";
import { whyUnsigned } from "./verify-request.ts";

/** Slack wants an answer within 3 s; if no listener acknowledges by then, answer empty. */
const ACK_DEADLINE_MS = 2500;

/**
 * Bolt's receiver for Countersign's own HTTP server: `POST /slack/events` is verified here on
 * the raw body (our stricter signature check), acknowledged as soon as a listener calls ack(),
 * and the listener's work continues after the answer has gone.
 */
export class HonoReceiver implements Receiver {
  private app: App | undefined;

  constructor(
    private readonly signingSecret: string,
    private readonly logger: Logger,
    private readonly now: () => Date,
  ) {}

  init(app: App): void {
    this.app = app;
  }

  async start(): Promise<void> {}
  async stop(): Promise<void> {}

  async handle(c: Context): Promise<Response> {
    const rawBody = await c.req.text();
    const why = whyUnsigned(this.signingSecret, {
      rawBody,
      timestamp: c.req.header("x-slack-request-timestamp"),
      signature: c.req.header("x-slack-signature"),
    }, this.now());
    if (why) {
      this.logger.warn({ why }, "refused an unsigned Slack request");
      return c.json({ error: { code: "unauthorized", message: `Slack signature check failed: ${why}` } }, 401);
    }
    let body: Record<string, unknown>;
    try {
      body = parseSlackBody(rawBody, c.req.header("content-type") ?? "");
    } catch (err) {
      return c.json({ error: { code: "invalid_request", message: (err as Error).message } }, 400);
    }
    if (body.type === "url_verification") return c.json({ challenge: body.challenge });
    if (body.ssl_check) return c.body(null, 200);

    let answer!: (response: Response) => void;
    const answered = new Promise<Response>((resolve) => (answer = resolve));
    let acked = false;
    const event: ReceiverEvent = {
      body,
      ...(c.req.header("x-slack-retry-num") ? { retryNum: Number(c.req.header("x-slack-retry-num")), retryReason: c.req.header("x-slack-retry-reason") ?? "" } : {}),
      ack: async (response?: unknown) => {
        if (acked) return;
        acked = true;
        if (response === undefined || response === "") answer(c.body(null, 200));
        else if (typeof response === "string") answer(c.text(response));
        else answer(c.json(response as object));
      },
    };
    void this.app!.processEvent(event).catch((err: unknown) => this.logger.error({ err }, "Slack listener failed"));
    const timer = setTimeout(() => answer(c.body(null, 200)), ACK_DEADLINE_MS);
    try {
      return await answered;
    } finally {
      clearTimeout(timer);
    }
  }
}

/** Interactivity arrives as `payload=<json>`; slash commands as plain form fields; events as JSON. */
export function parseSlackBody(rawBody: string, contentType: string): Record<string, unknown> {
  if (contentType.startsWith("application/json")) return JSON.parse(rawBody) as Record<string, unknown>;
  if (!contentType.startsWith("application/x-www-form-urlencoded")) throw new Error(`unsupported content-type '${contentType}'`);
  const form = Object.fromEntries(new URLSearchParams(rawBody));
  if (typeof form.payload === "string") {
    try {
      return JSON.parse(form.payload) as Record<string, unknown>;
    } catch {
      throw new Error("the payload field is not JSON");
    }
  }
  return form;
}
