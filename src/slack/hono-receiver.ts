import type { IncomingMessage, ServerResponse } from "node:http";
import type { App, Receiver, ReceiverEvent } from "@slack/bolt";
import type { Context } from "hono";
import type { Logger } from "pino";
import { answerNow } from "../http/answer-now.ts";
import { readCappedBody } from "../http/read-capped-body.ts";
import { whyNotFresh, whyUnsigned } from "./verify-request.ts";

/** Slack wants an answer within 3 s; if no listener acknowledges by then, answer empty. */
const ACK_DEADLINE_MS = 2500;

/**
 * Nobody is authenticated until the body's signature checks out, so nobody may make the server
 * hold more than this. Slack's own payloads are a few KiB (a modal submission is the largest).
 */
export const MAX_SLACK_BODY_BYTES = 1024 * 1024;

/**
 * Bolt's receiver for Countersign's own HTTP server: `POST /slack/events` is verified here on
 * the raw body (our stricter signature check), answered as soon as a listener calls ack(), and
 * that ack() returns only once the answer has been written, so nothing the listener does next
 * can delay it.
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

  /**
   * Cheapest refusal first, and nothing unbounded before the signature: a declared length over
   * the cap, then missing or stale signing headers, then a body that grows past the cap while
   * it streams in, then the signature itself; only a signed body is parsed.
   */
  async handle(c: Context): Promise<Response> {
    const declared = c.req.header("content-length");
    if (declared !== undefined && Number(declared) > MAX_SLACK_BODY_BYTES) return this.tooLarge(c);
    const headers = { timestamp: c.req.header("x-slack-request-timestamp"), signature: c.req.header("x-slack-signature") };
    const stale = whyNotFresh(headers, this.now());
    if (stale) return this.unsigned(c, stale);
    const { incoming, outgoing } = (c.env as { incoming?: IncomingMessage; outgoing?: ServerResponse } | undefined) ?? {};
    const read = await readCappedBody(incoming ?? c.req.raw.body, MAX_SLACK_BODY_BYTES).catch(() => undefined);
    if (!read) return c.json({ error: { code: "invalid_request", message: "the request body did not arrive whole" } }, 400);
    if (!read.ok) return this.tooLarge(c);
    const why = whyUnsigned(this.signingSecret, { ...headers, rawBody: read.body }, this.now());
    if (why) return this.unsigned(c, why);
    const rawBody = read.body.toString("utf8");
    let body: Record<string, unknown>;
    try {
      body = parseSlackBody(rawBody, c.req.header("content-type") ?? "");
    } catch (err) {
      return c.json({ error: { code: "invalid_request", message: (err as Error).message } }, 400);
    }
    if (body.type === "url_verification") return c.json({ challenge: body.challenge });
    if (body.ssl_check) return c.body(null, 200);

    let resolve!: (response: Response) => void;
    const answered = new Promise<Response>((r) => (resolve = r));
    // The first answer wins: the deadline's, or the listener's ack; a later one is dropped unwritten.
    let settled = false;
    // Settled only once an answer was made: one that throws (an unserialisable ack) leaves the
    // deadline's empty 200 to answer.
    const answer = (make: () => Response) => {
      if (settled) return;
      const response = make();
      settled = true;
      resolve(response);
    };
    let acked = false;
    const event: ReceiverEvent = {
      body,
      ...(c.req.header("x-slack-retry-num")
        ? { retryNum: Number(c.req.header("x-slack-retry-num")), retryReason: c.req.header("x-slack-retry-reason") ?? "" }
        : {}),
      ack: async (response?: unknown) => {
        if (acked) return;
        acked = true;
        // The empty 200 (a click's, most acks) is written here and now (answerNow), not after
        // the middlewares unwind: the click's decision starts once it is written.
        if (response === undefined || response === "") answer(() => answerNow(c));
        else if (typeof response === "string") answer(() => c.text(response));
        else answer(() => c.json(response as object));
        await written(outgoing);
      },
    };
    void this.app!.processEvent(event).catch((err: unknown) => this.logger.error({ err }, "Slack listener failed"));
    const timer = setTimeout(() => answer(() => c.body(null, 200)), ACK_DEADLINE_MS);
    try {
      return await answered;
    } finally {
      clearTimeout(timer);
    }
  }

  private unsigned(c: Context, why: string): Response {
    this.logger.warn({ why }, "refused an unsigned Slack request");
    return c.json({ error: { code: "unauthorized", message: `Slack signature check failed: ${why}` } }, 401);
  }

  /** The rest of the body is not read: the connection closes after this answer. */
  private tooLarge(c: Context): Response {
    this.logger.warn({ limit: MAX_SLACK_BODY_BYTES }, "refused an oversized Slack request");
    return c.json({ error: { code: "payload_too_large", message: `Slack request bodies are limited to ${MAX_SLACK_BODY_BYTES} bytes` } }, 413, {
      connection: "close",
    });
  }
}

/**
 * Resolves once Node has handed the answer to the socket ('finish'), or the connection is gone.
 * Without a Node response (app.request in a test) it waits one turn of the event loop, which is
 * after Hono has returned the answer.
 */
function written(outgoing: ServerResponse | undefined): Promise<void> {
  if (!outgoing) return new Promise((resolve) => setImmediate(resolve));
  if (outgoing.writableFinished || outgoing.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      outgoing.off("finish", done);
      outgoing.off("close", done);
      resolve();
    };
    outgoing.on("finish", done);
    outgoing.on("close", done);
  });
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
