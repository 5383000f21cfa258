import { randomBytes } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

/**
 * A Slack Web API emulator over real HTTP, for tests: the methods Countersign calls, the bearer
 * token check, Block Kit limits answered with `invalid_blocks` the way Slack answers them, a record
 * of every call, and faults on demand (429 with Retry-After, 5xx, Slack errors, lost replies,
 * dropped connections, delays, downtime).
 *
 * Point a WebClient (or Bolt's `clientOptions`) at it with `slackApiUrl: emulator.url`.
 * Errors are answered as Slack answers them: HTTP 200 with `{ ok: false, error }`, except 429
 * (rate limited) and injected 5xx. Unknown methods answer 404 `unknown_method`.
 *
 * Slack's per-channel limit on `chat.postMessage` (about one message a second per channel, short
 * bursts allowed) is enforced when asked (`channelRateLimit`, or `limitChannels()`): a post over
 * it answers 429 `ratelimited` with `Retry-After`, as Slack does. Off by default, because most tests
 * post faster than that on purpose and the product paces itself. `views.publish` (App Home) is
 * limited the same way per user when asked (`homeRateLimit`, or `limitHomes()`).
 */

/** A JSON value as the emulator parses request bodies. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

/** One request the emulator received, parsed. */
export interface SlackCall {
  /** The Web API method, e.g. `chat.postMessage` (the path after `/api/`). */
  method: string;
  /** The arguments: form fields or the JSON body, with `blocks`, `view`, `attachments` and `metadata` JSON strings parsed. */
  body: JsonObject;
  /** The exact body bytes as text. */
  raw: string;
  headers: IncomingHttpHeaders;
  at: Date;
  /** The answer, once given: HTTP status and JSON body (undefined body when the connection was dropped). */
  answer?: { status: number; body?: JsonObject };
  /** Set when an injected fault answered (or dropped) this call. */
  fault?: Fault;
}

/** A message as stored in a channel. Top-level messages carry their thread replies. */
export interface SlackMessage {
  channel: string;
  ts: string;
  /** For replies: the parent's ts. For parents with replies: their own ts (as Slack reports it). */
  thread_ts?: string;
  text?: string;
  blocks?: JsonValue[];
  attachments?: JsonValue[];
  metadata?: JsonValue;
  user: string;
  bot_id: string;
  team: string;
  type: "message";
  /** Set by chat.update. */
  edited?: { user: string; ts: string };
  /** Every earlier version, oldest first, replaced by chat.update. */
  history: { text?: string; blocks?: JsonValue[] }[];
  /** Thread replies, in order (only on top-level messages). */
  replies: SlackMessage[];
  /** Every argument the message was posted (or last updated) with. */
  args: JsonObject;
}

export interface EphemeralMessage {
  channel: string;
  user: string;
  message_ts: string;
  thread_ts?: string;
  text?: string;
  blocks?: JsonValue[];
  args: JsonObject;
}

/** A Home tab as `views.publish` set it for one user. */
export interface PublishedView {
  user: string;
  view: JsonObject;
  at: Date;
}

export interface OpenedView {
  id: string;
  trigger_id: string;
  view: JsonObject;
  /** Set by `views.push`: the view opened on top of another. */
  pushed?: boolean;
}

/** What `response_url` received (Bolt's `respond()`). */
export interface ResponseUrlPost {
  id: string;
  body: JsonValue;
  at: Date;
}

export interface SlackUser {
  id: string;
  team_id: string;
  name: string;
  real_name: string;
  tz: string;
  tz_offset: number;
  is_bot: boolean;
  deleted: boolean;
}

/** A fault to answer the next call(s) of a method with. */
export interface Fault {
  /** HTTP status. Default: 429 when `retryAfter` is set, else 200 when `error` is set, else 500. */
  status?: number;
  /** The Slack error code in the `{ ok: false, error }` body. Default `ratelimited` for 429, `internal_error` for 5xx. */
  error?: string;
  /** Seconds, sent as the `Retry-After` header (implies status 429 unless status is given). */
  retryAfter?: number;
  /** How many calls this fault answers. Default 1. */
  count?: number;
  /** Destroy the connection instead of answering (a network error). */
  dropConnection?: boolean;
  /** The call takes effect first (message stored, updated…), then the fault answers: a lost reply. */
  afterApplying?: boolean;
}

/**
 * Slack's per-channel limit on `chat.postMessage`, as a token bucket per channel: a quiet channel
 * takes `burst` posts at once, then `perSecond` (Slack: "1 per second per channel, short bursts
 * >1 allowed"; the burst size is not documented, so it is a setting).
 */
export interface ChannelRateLimit {
  /** Sustained posts per second per channel (> 0). */
  perSecond: number;
  /** Posts a channel takes back to back after a quiet spell (≥ 1, whole). */
  burst: number;
}

/** Slack's documented pace with a short burst: what `channelRateLimit: true` means. */
export const SLACK_CHANNEL_RATE_LIMIT: ChannelRateLimit = { perSecond: 1, burst: 3 };

/**
 * `views.publish` is a Tier 4 method ("100+ per minute", generous bursts); the emulator applies it
 * per user, as a Home is per user: what `homeRateLimit: true` means.
 */
export const SLACK_HOME_RATE_LIMIT: ChannelRateLimit = { perSecond: 100 / 60, burst: 10 };

/** One channel's bucket: how many posts it could take at `at` (ms, the emulator's clock). */
export interface ChannelBucket {
  tokens: number;
  at: number;
}

/**
 * The rate limit's rule, pure: takes a post from `bucket` at `now` (ms), or refuses it with the
 * whole seconds to wait (Slack's `Retry-After`, at least 1) until one post fits again. A refused
 * post costs nothing, so a client that waits `retryAfter` always gets in.
 */
export function takePost(bucket: ChannelBucket | undefined, now: number, limit: ChannelRateLimit): { bucket: ChannelBucket; retryAfter?: number } {
  const refilled = bucket === undefined ? limit.burst : Math.min(limit.burst, bucket.tokens + (Math.max(0, now - bucket.at) / 1000) * limit.perSecond);
  if (refilled >= 1) return { bucket: { tokens: refilled - 1, at: now } };
  return { bucket: { tokens: refilled, at: now }, retryAfter: Math.max(1, Math.ceil((1 - refilled) / limit.perSecond)) };
}

function checkRateLimit(limit: ChannelRateLimit, what: string): ChannelRateLimit {
  if (!(Number.isFinite(limit.perSecond) && limit.perSecond > 0))
    throw new Error(`${what} rate limit: perSecond must be a number above 0, got ${limit.perSecond}`);
  if (!(Number.isInteger(limit.burst) && limit.burst >= 1))
    throw new Error(`${what} rate limit: burst must be a whole number of at least 1, got ${limit.burst}`);
  return { ...limit };
}

/** How long after a 429 a post may still arrive without counting as early: it was sent before the 429 arrived (a burst in flight). */
export const EARLY_GRACE_MS = 250;

/** What the channel rate limit did since start (or `reset()`). */
export interface RateLimitCounts {
  /** Posts answered 429 by the channel rate limit. */
  refused: number;
  /** Posts that came to a channel more than EARLY_GRACE_MS after a 429 and before a post could fit again: a client that did not wait its Retry-After. */
  early: number;
}

export interface SlackEmulatorOptions {
  /** The bot token the emulator accepts. Default `xoxb-test-token`. */
  botToken?: string;
  /** Default `T0TEST`. */
  teamId?: string;
  /** Default `Countersign Test`. */
  teamName?: string;
  /** Default `U0BOT`. */
  botUserId?: string;
  /** Default `B0BOT`. */
  botId?: string;
  /** Default `A0COUNTERSIGN`. */
  appId?: string;
  /** Channel ids that exist. Default: any id starting with `C`. */
  channels?: string[];
  /** Members per user group (subteam) id, for `usergroups.users.list`. */
  usergroups?: Record<string, string[]>;
  /** Users known to `users.info`. Ids not listed but shaped like Slack user ids (`U…`/`W…`) get a made-up profile. */
  users?: Record<string, Partial<SlackUser>>;
  /** Seconds part of the first message ts. Default 1733140000. */
  firstTs?: number;
  /** Enforce Slack's per-channel limit on `chat.postMessage`: `true` for `SLACK_CHANNEL_RATE_LIMIT`. Default off. */
  channelRateLimit?: ChannelRateLimit | boolean;
  /** Enforce a per-user limit on `views.publish`: `true` for `SLACK_HOME_RATE_LIMIT`. Default off. */
  homeRateLimit?: ChannelRateLimit | boolean;
  /** The clock the rate limits read, in ms (default `performance.now`); tests may drive it. */
  now?: () => number;
}

/**
 * One method's rate limit, a token bucket per key (a channel, a user), with what it refused and
 * the calls that came before a refused key could take one again.
 */
class KeyedRateLimit {
  readonly counts: RateLimitCounts = { refused: 0, early: 0 };
  private limit: ChannelRateLimit | undefined;
  private readonly buckets = new Map<string, ChannelBucket>();
  /** Per key, after its last 429: when (emulator clock, ms) it was answered, and when a call fits again. */
  private readonly retryUntil = new Map<string, { refusedAt: number; fitsAt: number }>();

  constructor(private readonly what: string) {}

  /** Enforce `limit` from now on, every key starting with a full burst; `false` stops enforcing. */
  set(limit: ChannelRateLimit | false): void {
    this.limit = limit === false ? undefined : checkRateLimit(limit, this.what);
    this.buckets.clear();
    this.retryUntil.clear();
  }

  /** Forgets buckets and counts (the limit stays). */
  clear(): void {
    this.buckets.clear();
    this.retryUntil.clear();
    this.counts.refused = 0;
    this.counts.early = 0;
  }

  /** Takes a call for `key` at `now`, or answers 429 `ratelimited` with `Retry-After`. */
  take(key: string, now: number): Answer | undefined {
    if (!this.limit) return undefined;
    const window = this.retryUntil.get(key);
    // Calls already on their way when the 429 went out could not have known: only later ones count.
    if (window && now - window.refusedAt > EARLY_GRACE_MS && now < window.fitsAt) this.counts.early += 1;
    const { bucket, retryAfter } = takePost(this.buckets.get(key), now, this.limit);
    this.buckets.set(key, bucket);
    if (retryAfter === undefined) return undefined;
    this.counts.refused += 1;
    // The moment a call fits again, not the whole seconds told: any client that waited what it was told is on time.
    this.retryUntil.set(key, { refusedAt: now, fitsAt: now + ((1 - bucket.tokens) / this.limit.perSecond) * 1000 });
    return { status: 429, body: { ok: false, error: "ratelimited" }, headers: { "retry-after": String(retryAfter) } };
  }
}

const DEFAULT_TOKEN = "xoxb-test-token";

/** Block Kit limits the emulator enforces (Slack's documented limits). */
export const BLOCK_KIT_LIMITS = {
  blocksPerMessage: 50,
  blocksPerView: 100,
  sectionText: 3000,
  sectionFields: 10,
  sectionFieldText: 2000,
  headerText: 150,
  buttonText: 75,
  buttonValue: 2000,
  buttonUrl: 3000,
  actionId: 255,
  blockId: 255,
  contextElements: 10,
  actionsElements: 25,
  inputLabel: 2000,
  inputHint: 2000,
  confirmTitle: 100,
  confirmText: 300,
  confirmButton: 30,
  messageText: 40_000,
  viewTitle: 24,
  viewButton: 24,
  callbackId: 255,
  privateMetadata: 3000,
} as const;

const KNOWN_BLOCK_TYPES = new Set(["section", "header", "divider", "context", "actions", "input", "image", "rich_text", "markdown", "file", "video", "table"]);
const KNOWN_ELEMENT_TYPES = new Set([
  "button",
  "checkboxes",
  "datepicker",
  "datetimepicker",
  "email_text_input",
  "external_select",
  "file_input",
  "image",
  "multi_channels_select",
  "multi_conversations_select",
  "multi_external_select",
  "multi_static_select",
  "multi_users_select",
  "number_input",
  "overflow",
  "plain_text_input",
  "radio_buttons",
  "rich_text_input",
  "static_select",
  "channels_select",
  "conversations_select",
  "users_select",
  "timepicker",
  "url_text_input",
  "workflow_button",
]);

type Answer = { status: number; body: JsonObject; headers?: Record<string, string> };
type Handler = (args: JsonObject) => JsonObject;
/** Says why a token may not call a method (a Slack error code), or undefined when it may. */
export type TokenCheck = (token: string) => string | undefined;

/** Thrown by a method handler to answer `{ ok: false, error }` (with `extra` fields). */
export class SlackApiError extends Error {
  constructor(
    readonly error: string,
    readonly extra: JsonObject = {},
  ) {
    super(error);
  }
}

export class SlackEmulator {
  /** Every call received, in order (including refused and faulted ones). */
  readonly calls: SlackCall[] = [];
  readonly ephemerals: EphemeralMessage[] = [];
  readonly views: OpenedView[] = [];
  /** Every `views.update`, in order; the view itself (in `views`) holds the last one. */
  readonly viewUpdates: { view_id: string; view: JsonObject }[] = [];
  /** Every Home tab published (`views.publish`), in order; the last one per user is what they see. */
  readonly published: PublishedView[] = [];
  readonly responseUrlPosts: ResponseUrlPost[] = [];
  /** Channels the bot is not a member of (`conversations.info`); it is in every other known channel. */
  readonly botOutside = new Set<string>();
  /** The bearer token accepted now; change it to simulate a revoked or rotated token. */
  botToken: string;
  readonly teamId: string;
  readonly teamName: string;
  readonly botUserId: string;
  readonly botId: string;
  readonly appId: string;
  /** `http://127.0.0.1:PORT/api/` once started: the `slackApiUrl`. */
  url = "";
  /** `http://127.0.0.1:PORT` once started. */
  origin = "";
  /** What the channel rate limit refused, and posts that did not wait their Retry-After. */
  get rateLimited(): RateLimitCounts {
    return this.channelLimit.counts;
  }
  /** What the per-user `views.publish` limit refused, and publishes that did not wait their Retry-After. */
  get homeRateLimited(): RateLimitCounts {
    return this.homeLimit.counts;
  }

  private server: Server | undefined;
  private port = 0;
  private readonly sockets = new Set<Socket>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly faults = new Map<string, Fault[]>();
  private readonly channelMessages = new Map<string, SlackMessage[]>();
  private readonly usergroups = new Map<string, string[]>();
  private readonly users = new Map<string, Partial<SlackUser>>();
  private readonly channels: Set<string> | undefined;
  /** Channels that exist but are archived: posting to them answers `is_archived`. */
  private readonly archived = new Set<string>();
  private readonly usedTriggers = new Set<string>();
  private readonly expiredTriggers = new Set<string>();
  private delayMs = 0;
  private tsCounter = 0;
  private readonly firstTs: number;
  private isDown = false;
  private readonly handlers: Record<string, Handler>;
  private readonly tokenChecks = new Map<string, TokenCheck>();
  private readonly channelLimit = new KeyedRateLimit("channel");
  private readonly homeLimit = new KeyedRateLimit("views.publish");
  private readonly now: () => number;

  constructor(options: SlackEmulatorOptions = {}) {
    this.botToken = options.botToken ?? DEFAULT_TOKEN;
    this.teamId = options.teamId ?? "T0TEST";
    this.teamName = options.teamName ?? "Countersign Test";
    this.botUserId = options.botUserId ?? "U0BOT";
    this.botId = options.botId ?? "B0BOT";
    this.appId = options.appId ?? "A0COUNTERSIGN";
    this.firstTs = options.firstTs ?? 1_733_140_000;
    this.channels = options.channels ? new Set(options.channels) : undefined;
    for (const [id, members] of Object.entries(options.usergroups ?? {})) this.usergroups.set(id, [...members]);
    for (const [id, user] of Object.entries(options.users ?? {})) this.users.set(id, user);
    this.now = options.now ?? (() => performance.now());
    if (options.channelRateLimit) this.limitChannels(options.channelRateLimit === true ? SLACK_CHANNEL_RATE_LIMIT : options.channelRateLimit);
    if (options.homeRateLimit) this.limitHomes(options.homeRateLimit === true ? SLACK_HOME_RATE_LIMIT : options.homeRateLimit);
    this.handlers = {
      "auth.test": () => this.authTest(),
      "chat.postMessage": (args) => this.postMessage(args),
      "chat.update": (args) => this.update(args),
      "chat.postEphemeral": (args) => this.postEphemeral(args),
      "views.open": (args) => this.viewsOpen(args),
      "views.push": (args) => this.viewsOpen(args, true),
      "views.update": (args) => this.viewsUpdate(args),
      "usergroups.users.list": (args) => this.usergroupsUsersList(args),
      "users.info": (args) => this.usersInfo(args),
      "views.publish": (args) => this.viewsPublish(args),
      "conversations.info": (args) => this.conversationsInfo(args),
    };
  }

  // ---------------------------------------------------------------- lifecycle

  async start(port = 0): Promise<string> {
    this.server = createServer((req, res) => {
      this.route(req, res).catch((err: unknown) => {
        // A bug in the emulator must show, not hang the client.
        if (!res.headersSent && !res.destroyed) res.writeHead(500, { "content-type": "text/plain" }).end(String(err));
      });
    });
    this.server.on("connection", (socket: Socket) => {
      this.sockets.add(socket);
      socket.on("close", () => this.sockets.delete(socket));
    });
    await this.listen(port);
    return this.url;
  }

  async stop(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    if (!this.server) return;
    const server = this.server;
    this.server = undefined;
    if (!server.listening) return;
    await this.close(server);
  }

  /** Slack unreachable: stops listening (connections are refused) and drops open connections. */
  async down(): Promise<void> {
    if (!this.server || this.isDown) return;
    this.isDown = true;
    await this.close(this.server);
  }

  /** Slack reachable again, on the same port (the same `url`). */
  async up(): Promise<void> {
    if (!this.server || !this.isDown) return;
    await this.listen(this.port);
    this.isDown = false;
  }

  // ---------------------------------------------------------------- test controls

  /** The next `count` (default 1) calls of `method` (or `"*"`: any method) are answered by `fault`. Faults queue in order. */
  failNext(method: string, fault: Fault = {}): void {
    const queue = this.faults.get(method) ?? [];
    queue.push({ ...fault, count: fault.count ?? 1 });
    this.faults.set(method, queue);
  }

  /** Removes faults not yet used. */
  clearFaults(): void {
    this.faults.clear();
  }

  /**
   * Enforce Slack's per-channel limit on `chat.postMessage` from now on (default: Slack's pace,
   * `SLACK_CHANNEL_RATE_LIMIT`), or stop enforcing it (`false`). Channels start with a full burst.
   */
  limitChannels(limit: ChannelRateLimit | false = SLACK_CHANNEL_RATE_LIMIT): void {
    this.channelLimit.set(limit);
  }

  /**
   * Enforce a per-user limit on `views.publish` from now on (default `SLACK_HOME_RATE_LIMIT`, Tier
   * 4), or stop enforcing it (`false`): a publish over it answers 429 with `Retry-After`.
   */
  limitHomes(limit: ChannelRateLimit | false = SLACK_HOME_RATE_LIMIT): void {
    this.homeLimit.set(limit);
  }

  /** Archives a channel (`chat.postMessage` to it answers `is_archived`, as Slack does), or brings it back (`false`). */
  archiveChannel(channel: string, archived = true): void {
    if (archived) this.archived.add(channel);
    else this.archived.delete(channel);
  }

  /** Every answer waits `ms` first (0: no delay). */
  delay(ms: number): void {
    this.delayMs = ms;
  }

  /** Sets a user group's members (for `usergroups.users.list`). */
  setUsergroup(id: string, members: string[]): void {
    this.usergroups.set(id, [...members]);
  }

  /**
   * Serves another Web API method (e.g. `apps.connections.open` for the Socket Mode emulator).
   * `tokenCheck` decides which tokens may call it; by default only the bot token.
   */
  addMethod(method: string, handler: Handler, tokenCheck?: TokenCheck): void {
    this.handlers[method] = handler;
    if (tokenCheck) this.tokenChecks.set(method, tokenCheck);
  }

  /** `views.open` with this trigger id answers `expired_trigger_id` (Slack's triggers live 3 s). */
  expireTrigger(triggerId: string): void {
    this.expiredTriggers.add(triggerId);
  }

  /** A `response_url` served by the emulator; what is posted to it lands in `responseUrlPosts`. */
  responseUrl(id: string = randomBytes(6).toString("hex")): string {
    return `${this.origin}/response/${id}`;
  }

  /** Forgets calls, messages, ephemerals, views and faults (users, groups and token stay). */
  reset(): void {
    this.calls.length = 0;
    this.ephemerals.length = 0;
    this.views.length = 0;
    this.viewUpdates.length = 0;
    this.published.length = 0;
    this.responseUrlPosts.length = 0;
    this.channelMessages.clear();
    this.faults.clear();
    this.usedTriggers.clear();
    this.expiredTriggers.clear();
    this.delayMs = 0;
    this.channelLimit.clear();
    this.homeLimit.clear();
  }

  // ---------------------------------------------------------------- inspection

  callsTo(method: string): SlackCall[] {
    return this.calls.filter((c) => c.method === method);
  }

  /** Top-level messages of every channel (or of `channel`), in posting order, each with its `replies`. */
  messagesIn(channel?: string): SlackMessage[] {
    if (channel !== undefined) return [...(this.channelMessages.get(channel) ?? [])];
    return [...this.channelMessages.values()].flat().sort((a, b) => compareTs(a.ts, b.ts));
  }

  /** Top-level messages of every channel, in posting order, each with its `replies`. */
  get messages(): SlackMessage[] {
    return this.messagesIn();
  }

  /** A message by channel and ts (top-level or reply). */
  message(channel: string, ts: string): SlackMessage | undefined {
    for (const m of this.channelMessages.get(channel) ?? []) {
      if (m.ts === ts) return m;
      const reply = m.replies.find((r) => r.ts === ts);
      if (reply) return reply;
    }
    return undefined;
  }

  /** The replies under the message `ts` in `channel`, in order (not including the parent). Empty when there are none. */
  thread(channel: string, ts: string): SlackMessage[] {
    return [...(this.topLevel(channel, ts)?.replies ?? [])];
  }

  // ---------------------------------------------------------------- HTTP

  private async listen(port: number): Promise<void> {
    const server = this.server!;
    await new Promise<void>((resolve, reject) => {
      const onError = (err: Error) => reject(err);
      server.once("error", onError);
      server.listen(port, "127.0.0.1", () => {
        server.off("error", onError);
        resolve();
      });
    });
    this.port = (server.address() as AddressInfo).port;
    this.origin = `http://127.0.0.1:${this.port}`;
    this.url = `${this.origin}/api/`;
  }

  private async close(server: Server): Promise<void> {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const path = new URL(req.url ?? "/", "http://x").pathname;
    const response = /^\/response\/([^/]+)$/.exec(path);
    if (response && req.method === "POST") {
      this.responseUrlPosts.push({ id: response[1]!, body: parseJsonLoose(raw), at: new Date() });
      await this.send(res, { status: 200, body: { ok: true } });
      return;
    }
    const api = /^\/api\/([A-Za-z0-9_.]+)$/.exec(path);
    if (!api) {
      await this.send(res, { status: 404, body: { ok: false, error: "unknown_method" } });
      return;
    }
    const method = api[1]!;
    const call: SlackCall = { method, body: {}, raw, headers: { ...req.headers }, at: new Date() };
    this.calls.push(call);

    let parsed: { body: JsonObject; parseError?: string };
    try {
      parsed = parseArguments(req.headers["content-type"], raw);
    } catch {
      parsed = { body: {}, parseError: "invalid_json" };
    }
    call.body = parsed.body;

    const fault = this.takeFault(method);
    if (fault && !fault.afterApplying) {
      call.fault = fault;
      await this.answerFault(res, call, fault);
      return;
    }

    const answer = this.answer(method, req.headers, parsed, call.body);
    if (fault) {
      call.fault = fault;
      await this.answerFault(res, call, fault);
      return;
    }
    call.answer = { status: answer.status, body: answer.body };
    await this.send(res, answer);
  }

  private answer(method: string, headers: IncomingHttpHeaders, parsed: { body: JsonObject; parseError?: string }, args: JsonObject): Answer {
    const handler = Object.hasOwn(this.handlers, method) ? this.handlers[method] : undefined;
    if (!handler) return { status: 404, body: { ok: false, error: "unknown_method", req_method: method } };
    if (parsed.parseError) return { status: 200, body: { ok: false, error: parsed.parseError } };

    const bearer = /^Bearer\s+(.+)$/i.exec(headers.authorization ?? "")?.[1]?.trim();
    const token = bearer ?? (typeof args.token === "string" ? args.token : undefined);
    if (!token) return { status: 200, body: { ok: false, error: "not_authed" } };
    const refused = this.tokenChecks.has(method) ? this.tokenChecks.get(method)!(token) : token === this.botToken ? undefined : "invalid_auth";
    if (refused) return { status: 200, body: { ok: false, error: refused } };
    const limited = this.rateLimit(method, args);
    if (limited) return limited;

    try {
      return { status: 200, body: { ok: true, ...handler(args) } };
    } catch (err) {
      if (err instanceof SlackApiError) return { status: 200, body: { ok: false, error: err.error, ...err.extra } };
      throw err;
    }
  }

  /** Slack rate-limits requests, valid or not: every authenticated post to a channel, and publish to a user's Home, counts. */
  private rateLimit(method: string, args: JsonObject): Answer | undefined {
    const key = method === "chat.postMessage" ? optionalString(args, "channel") : method === "views.publish" ? optionalString(args, "user_id") : undefined;
    if (!key) return undefined;
    return (method === "chat.postMessage" ? this.channelLimit : this.homeLimit).take(key, this.now());
  }

  private takeFault(method: string): Fault | undefined {
    for (const key of [method, "*"]) {
      const queue = this.faults.get(key);
      const head = queue?.[0];
      if (!queue || !head) continue;
      head.count = (head.count ?? 1) - 1;
      if (head.count <= 0) queue.shift();
      return { ...head };
    }
    return undefined;
  }

  private async answerFault(res: ServerResponse, call: SlackCall, fault: Fault): Promise<void> {
    await this.wait();
    if (fault.dropConnection) {
      call.answer = { status: 0 };
      res.socket?.destroy();
      return;
    }
    const status = fault.status ?? (fault.retryAfter !== undefined ? 429 : fault.error !== undefined ? 200 : 500);
    const error = fault.error ?? (status === 429 ? "ratelimited" : "internal_error");
    const body: JsonObject = { ok: false, error };
    const headers: Record<string, string> = {};
    if (fault.retryAfter !== undefined) headers["retry-after"] = String(fault.retryAfter);
    else if (status === 429) headers["retry-after"] = "1";
    call.answer = { status, body };
    this.write(res, { status, body, headers });
  }

  private async send(res: ServerResponse, answer: Answer): Promise<void> {
    await this.wait();
    this.write(res, answer);
  }

  private write(res: ServerResponse, { status, body, headers }: Answer): void {
    if (res.destroyed || res.writableEnded) return;
    res.writeHead(status, { "content-type": "application/json; charset=utf-8", ...headers }).end(JSON.stringify(body));
  }

  private wait(): Promise<void> {
    if (this.delayMs <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        resolve();
      }, this.delayMs);
      this.timers.add(timer);
    });
  }

  // ---------------------------------------------------------------- methods

  private authTest(): JsonObject {
    return {
      url: `https://${slugify(this.teamName)}.slack.com/`,
      team: this.teamName,
      user: "countersign",
      team_id: this.teamId,
      user_id: this.botUserId,
      bot_id: this.botId,
      is_enterprise_install: false,
    };
  }

  private postMessage(args: JsonObject): JsonObject {
    const channel = this.requireChannel(args);
    if (this.archived.has(channel)) throw new SlackApiError("is_archived");
    const content = this.messageContent(args);
    const threadTs = optionalString(args, "thread_ts");
    let parent: SlackMessage | undefined;
    if (threadTs !== undefined) {
      // Slack files a reply to a reply under the same parent.
      parent = this.topLevel(channel, threadTs) ?? (this.channelMessages.get(channel) ?? []).find((m) => m.replies.some((r) => r.ts === threadTs));
      if (!parent) throw new SlackApiError("thread_not_found");
    }
    const ts = this.nextTs();
    const message: SlackMessage = {
      type: "message",
      channel,
      ts,
      user: this.botUserId,
      bot_id: this.botId,
      team: this.teamId,
      history: [],
      replies: [],
      args,
      ...content,
    };
    if (parent) {
      message.thread_ts = parent.ts;
      parent.thread_ts = parent.ts;
      parent.replies.push(message);
    } else {
      const list = this.channelMessages.get(channel) ?? [];
      list.push(message);
      this.channelMessages.set(channel, list);
    }
    return { channel, ts, message: publicMessage(message) };
  }

  private update(args: JsonObject): JsonObject {
    const channel = this.requireChannel(args);
    const ts = optionalString(args, "ts");
    if (!ts) throw new SlackApiError("message_not_found");
    const message = this.message(channel, ts);
    if (!message) throw new SlackApiError("message_not_found");
    const content = this.messageContent(args);
    message.history.push({ ...(message.text !== undefined && { text: message.text }), ...(message.blocks !== undefined && { blocks: message.blocks }) });
    // Slack keeps what an update does not mention, except that new text without blocks clears blocks.
    if (content.text !== undefined) message.text = content.text;
    if (content.blocks !== undefined) message.blocks = content.blocks;
    else if (content.text !== undefined) delete message.blocks;
    if (content.attachments !== undefined) message.attachments = content.attachments;
    message.edited = { user: this.botUserId, ts: this.nextTs() };
    message.args = args;
    return { channel, ts, text: message.text ?? "", message: publicMessage(message) };
  }

  private postEphemeral(args: JsonObject): JsonObject {
    const channel = this.requireChannel(args);
    const user = optionalString(args, "user");
    if (!user) throw new SlackApiError("user_not_found");
    if (!this.userExists(user)) throw new SlackApiError("user_not_in_channel");
    const content = this.messageContent(args);
    const messageTs = this.nextTs();
    const threadTs = optionalString(args, "thread_ts");
    this.ephemerals.push({ channel, user, message_ts: messageTs, ...(threadTs !== undefined && { thread_ts: threadTs }), ...content, args });
    return { message_ts: messageTs };
  }

  /** A modal's current content, after its updates: what the person sees now. */
  viewOf(id: string): JsonObject | undefined {
    return this.views.find((v) => v.id === id)?.view;
  }

  /** Replaces an opened view's content, as `views.update` by `view_id` does (Countersign never sends `hash`). */
  private viewsUpdate(args: JsonObject): JsonObject {
    const viewId = optionalString(args, "view_id");
    if (!viewId) throw new SlackApiError("invalid_arguments", responseMetadata(["missing required field: view_id"]));
    const entry = this.views.find((v) => v.id === viewId);
    if (!entry) throw new SlackApiError("not_found");
    const view = args.view;
    if (!isObject(view)) throw new SlackApiError("invalid_arguments", responseMetadata(["missing required field: view"]));
    const errors = validateView(view);
    if (errors.length > 0) throw new SlackApiError("invalid_arguments", responseMetadata(errors));
    entry.view = { ...entry.view, private_metadata: "", callback_id: "", ...view, id: viewId, hash: `${Date.now()}.${randomBytes(4).toString("hex")}` };
    this.viewUpdates.push({ view_id: viewId, view: entry.view });
    return { view: entry.view };
  }

  private viewsOpen(args: JsonObject, pushed = false): JsonObject {
    const triggerId = optionalString(args, "trigger_id");
    if (!triggerId) throw new SlackApiError("invalid_arguments", responseMetadata(["missing required field: trigger_id"]));
    if (this.expiredTriggers.has(triggerId)) throw new SlackApiError("expired_trigger_id");
    if (this.usedTriggers.has(triggerId)) throw new SlackApiError("exchanged_trigger_id");
    const view = args.view;
    if (!isObject(view)) throw new SlackApiError("invalid_arguments", responseMetadata(["missing required field: view"]));
    const errors = validateView(view);
    if (errors.length > 0) throw new SlackApiError("invalid_arguments", responseMetadata(errors));
    this.usedTriggers.add(triggerId);
    const id = `V${randomBytes(5).toString("hex").toUpperCase()}`;
    const opened: JsonObject = {
      id,
      team_id: this.teamId,
      app_id: this.appId,
      bot_id: this.botId,
      hash: `${Date.now()}.${randomBytes(4).toString("hex")}`,
      state: { values: {} },
      private_metadata: "",
      callback_id: "",
      ...view,
    };
    this.views.push({ id, trigger_id: triggerId, view: opened, ...(pushed ? { pushed } : {}) });
    return { view: opened };
  }

  /** What this user's Home tab shows now: the last view published for them. */
  homeOf(user: string): JsonObject | undefined {
    return this.published.findLast((p) => p.user === user)?.view;
  }

  private viewsPublish(args: JsonObject): JsonObject {
    const user = optionalString(args, "user_id");
    if (!user) throw new SlackApiError("invalid_arguments", responseMetadata(["missing required field: user_id"]));
    if (!this.userExists(user)) throw new SlackApiError("user_not_found");
    const view = args.view;
    if (!isObject(view)) throw new SlackApiError("invalid_arguments", responseMetadata(["missing required field: view"]));
    const errors = validateHomeView(view);
    if (errors.length > 0) throw new SlackApiError("invalid_arguments", responseMetadata(errors));
    const id = `V${randomBytes(5).toString("hex").toUpperCase()}`;
    const published: JsonObject = {
      id,
      team_id: this.teamId,
      app_id: this.appId,
      bot_id: this.botId,
      hash: `${Date.now()}.${randomBytes(4).toString("hex")}`,
      ...view,
    };
    this.published.push({ user, view: published, at: new Date() });
    return { view: published };
  }

  /** Slack hides a private channel (`G…`) from a bot outside it: `channel_not_found`, as for one that does not exist. */
  private conversationsInfo(args: JsonObject): JsonObject {
    const channel = this.requireChannel(args);
    const isPrivate = channel.startsWith("G");
    const isMember = !this.botOutside.has(channel);
    if (isPrivate && !isMember) throw new SlackApiError("channel_not_found");
    return {
      channel: {
        id: channel,
        name: channel.toLowerCase(),
        is_channel: !isPrivate,
        is_group: isPrivate,
        is_private: isPrivate,
        is_archived: this.archived.has(channel),
        is_member: isMember,
      },
    };
  }

  private usergroupsUsersList(args: JsonObject): JsonObject {
    const id = optionalString(args, "usergroup");
    const members = id === undefined ? undefined : this.usergroups.get(id);
    if (!members) throw new SlackApiError("no_such_subteam");
    return { users: [...members] };
  }

  private usersInfo(args: JsonObject): JsonObject {
    const id = optionalString(args, "user");
    if (!id || !this.userExists(id)) throw new SlackApiError("user_not_found");
    const known = this.users.get(id) ?? {};
    const name = known.name ?? id.toLowerCase();
    const user: SlackUser = {
      id,
      team_id: this.teamId,
      name,
      real_name: name,
      tz: "Europe/Lisbon",
      tz_offset: 0,
      is_bot: false,
      deleted: false,
      ...known,
    };
    return { user: { ...user, profile: { real_name: user.real_name, display_name: user.name, team: user.team_id } } };
  }

  // ---------------------------------------------------------------- helpers

  private userExists(id: string): boolean {
    return this.users.has(id) || /^[UW][A-Z0-9]{2,}$/.test(id);
  }

  private requireChannel(args: JsonObject): string {
    const channel = optionalString(args, "channel");
    if (!channel) throw new SlackApiError("channel_not_found");
    const known = this.channels ? this.channels.has(channel) : channel.startsWith("C");
    if (!known) throw new SlackApiError("channel_not_found");
    return channel;
  }

  /** The content of a chat.* call, validated as Slack validates it. */
  private messageContent(args: JsonObject): { text?: string; blocks?: JsonValue[]; attachments?: JsonValue[]; metadata?: JsonValue } {
    const text = args.text === undefined ? undefined : String(args.text);
    if (args.blocks !== undefined && !Array.isArray(args.blocks)) throw new SlackApiError("invalid_blocks_format");
    const blocks = args.blocks as JsonValue[] | undefined;
    if (args.attachments !== undefined && !Array.isArray(args.attachments)) throw new SlackApiError("invalid_attachments");
    const attachments = args.attachments as JsonValue[] | undefined;
    if ((text === undefined || text === "") && (!blocks || blocks.length === 0) && (!attachments || attachments.length === 0))
      throw new SlackApiError("no_text");
    if (text !== undefined && text.length > BLOCK_KIT_LIMITS.messageText) throw new SlackApiError("msg_too_long");
    if (blocks) {
      const errors = validateBlocks(blocks, "/blocks", BLOCK_KIT_LIMITS.blocksPerMessage);
      if (errors.length > 0) throw new SlackApiError("invalid_blocks", { errors, ...responseMetadata(errors) });
    }
    return {
      ...(text !== undefined && { text }),
      ...(blocks !== undefined && { blocks }),
      ...(attachments !== undefined && { attachments }),
      ...(args.metadata !== undefined && { metadata: args.metadata }),
    };
  }

  private topLevel(channel: string, ts: string): SlackMessage | undefined {
    return (this.channelMessages.get(channel) ?? []).find((m) => m.ts === ts);
  }

  /** Unique, increasing: 1733140000.000100, 1733140000.000200, … */
  private nextTs(): string {
    this.tsCounter += 1;
    const micros = this.tsCounter * 100;
    return `${this.firstTs + Math.floor(micros / 1_000_000)}.${String(micros % 1_000_000).padStart(6, "0")}`;
  }
}

// -------------------------------------------------------------------- Block Kit validation

/**
 * Validates a blocks array as Slack does for messages (`max` 50) or views (`max` 100). Returns
 * Slack-style messages, `"<problem> [json-pointer:<pointer>]"`; empty when valid.
 */
export function validateBlocks(blocks: JsonValue[], pointer = "/blocks", max: number = BLOCK_KIT_LIMITS.blocksPerMessage): string[] {
  const errors: string[] = [];
  if (blocks.length > max) errors.push(`no more than ${max} items allowed [json-pointer:${pointer}]`);
  const blockIds = new Set<string>();
  blocks.forEach((block, i) => {
    const at = `${pointer}/${i}`;
    if (!isObject(block)) {
      errors.push(`must be an object [json-pointer:${at}]`);
      return;
    }
    const type = block.type;
    if (typeof type !== "string") {
      errors.push(`missing required field: type [json-pointer:${at}]`);
      return;
    }
    if (!KNOWN_BLOCK_TYPES.has(type)) {
      errors.push(`unsupported type: ${type} [json-pointer:${at}/type]`);
      return;
    }
    if (block.block_id !== undefined) {
      if (typeof block.block_id !== "string") errors.push(`must be a string [json-pointer:${at}/block_id]`);
      else {
        maxLength(errors, block.block_id, BLOCK_KIT_LIMITS.blockId, `${at}/block_id`);
        if (blockIds.has(block.block_id)) errors.push(`duplicate block_id: ${block.block_id} [json-pointer:${at}/block_id]`);
        blockIds.add(block.block_id);
      }
    }
    switch (type) {
      case "section": {
        if (block.text === undefined && block.fields === undefined) errors.push(`must provide either text or fields [json-pointer:${at}]`);
        if (block.text !== undefined) validateText(errors, block.text, `${at}/text`, { max: BLOCK_KIT_LIMITS.sectionText });
        if (block.fields !== undefined) {
          if (!Array.isArray(block.fields)) errors.push(`must be an array [json-pointer:${at}/fields]`);
          else {
            if (block.fields.length > BLOCK_KIT_LIMITS.sectionFields)
              errors.push(`no more than ${BLOCK_KIT_LIMITS.sectionFields} items allowed [json-pointer:${at}/fields]`);
            block.fields.forEach((field, j) => {
              validateText(errors, field, `${at}/fields/${j}`, { max: BLOCK_KIT_LIMITS.sectionFieldText });
            });
          }
        }
        if (block.accessory !== undefined) validateElement(errors, block.accessory, `${at}/accessory`);
        break;
      }
      case "header":
        validateText(errors, block.text, `${at}/text`, { max: BLOCK_KIT_LIMITS.headerText, plainOnly: true });
        break;
      case "context": {
        if (!Array.isArray(block.elements)) {
          errors.push(`missing required field: elements [json-pointer:${at}]`);
          break;
        }
        if (block.elements.length === 0) errors.push(`must provide at least 1 items [json-pointer:${at}/elements]`);
        if (block.elements.length > BLOCK_KIT_LIMITS.contextElements)
          errors.push(`no more than ${BLOCK_KIT_LIMITS.contextElements} items allowed [json-pointer:${at}/elements]`);
        block.elements.forEach((element, j) => {
          if (isObject(element) && element.type === "image") return;
          validateText(errors, element, `${at}/elements/${j}`, { max: BLOCK_KIT_LIMITS.sectionText });
        });
        break;
      }
      case "actions": {
        if (!Array.isArray(block.elements)) {
          errors.push(`missing required field: elements [json-pointer:${at}]`);
          break;
        }
        if (block.elements.length === 0) errors.push(`must provide at least 1 items [json-pointer:${at}/elements]`);
        if (block.elements.length > BLOCK_KIT_LIMITS.actionsElements)
          errors.push(`no more than ${BLOCK_KIT_LIMITS.actionsElements} items allowed [json-pointer:${at}/elements]`);
        const actionIds = new Set<string>();
        block.elements.forEach((element, j) => {
          validateElement(errors, element, `${at}/elements/${j}`);
          if (isObject(element) && typeof element.action_id === "string") {
            if (actionIds.has(element.action_id)) errors.push(`duplicate action_id: ${element.action_id} [json-pointer:${at}/elements/${j}/action_id]`);
            actionIds.add(element.action_id);
          }
        });
        break;
      }
      case "input":
        validateText(errors, block.label, `${at}/label`, { max: BLOCK_KIT_LIMITS.inputLabel, plainOnly: true });
        if (block.hint !== undefined) validateText(errors, block.hint, `${at}/hint`, { max: BLOCK_KIT_LIMITS.inputHint, plainOnly: true });
        if (block.element === undefined) errors.push(`missing required field: element [json-pointer:${at}]`);
        else validateElement(errors, block.element, `${at}/element`);
        break;
      default:
        break;
    }
  });
  return errors;
}

/** Validates a Home tab as `views.publish` does (at most 100 blocks), pointers under `/view`. */
export function validateHomeView(view: JsonObject): string[] {
  const errors: string[] = [];
  if (view.type !== "home") errors.push(`must be one of: home [json-pointer:/view/type]`);
  if (!Array.isArray(view.blocks)) errors.push(`missing required field: blocks [json-pointer:/view]`);
  else errors.push(...validateBlocks(view.blocks, "/view/blocks", BLOCK_KIT_LIMITS.blocksPerView));
  return errors;
}

/** Validates a modal view as `views.open` does; messages as in `validateBlocks`, pointers under `/view`. */
export function validateView(view: JsonObject): string[] {
  const errors: string[] = [];
  if (view.type !== "modal") errors.push(`must be one of: modal [json-pointer:/view/type]`);
  validateText(errors, view.title, "/view/title", { max: BLOCK_KIT_LIMITS.viewTitle, plainOnly: true });
  if (view.submit !== undefined) validateText(errors, view.submit, "/view/submit", { max: BLOCK_KIT_LIMITS.viewButton, plainOnly: true });
  if (view.close !== undefined) validateText(errors, view.close, "/view/close", { max: BLOCK_KIT_LIMITS.viewButton, plainOnly: true });
  if (typeof view.callback_id === "string") maxLength(errors, view.callback_id, BLOCK_KIT_LIMITS.callbackId, "/view/callback_id");
  if (typeof view.private_metadata === "string") maxLength(errors, view.private_metadata, BLOCK_KIT_LIMITS.privateMetadata, "/view/private_metadata");
  if (!Array.isArray(view.blocks)) errors.push(`missing required field: blocks [json-pointer:/view]`);
  else {
    errors.push(...validateBlocks(view.blocks, "/view/blocks", BLOCK_KIT_LIMITS.blocksPerView));
    if (view.submit === undefined && view.blocks.some((b) => isObject(b) && b.type === "input"))
      errors.push(`must provide submit when blocks contain input [json-pointer:/view/submit]`);
  }
  return errors;
}

function validateText(errors: string[], text: JsonValue | undefined, at: string, { max, plainOnly = false }: { max: number; plainOnly?: boolean }): void {
  if (!isObject(text)) return void errors.push(`must be a text object [json-pointer:${at}]`);
  if (text.type !== "plain_text" && (plainOnly || text.type !== "mrkdwn")) {
    errors.push(`must be one of: ${plainOnly ? "plain_text" : "plain_text, mrkdwn"} [json-pointer:${at}/type]`);
  }
  if (typeof text.text !== "string") return void errors.push(`missing required field: text [json-pointer:${at}]`);
  if (text.text.length === 0) errors.push(`must be more than 0 characters [json-pointer:${at}/text]`);
  maxLength(errors, text.text, max, `${at}/text`);
}

function validateElement(errors: string[], element: JsonValue, at: string): void {
  if (!isObject(element)) return void errors.push(`must be an object [json-pointer:${at}]`);
  const type = element.type;
  if (typeof type !== "string" || !KNOWN_ELEMENT_TYPES.has(type)) return void errors.push(`unsupported type: ${String(type)} [json-pointer:${at}/type]`);
  if (element.action_id !== undefined) {
    if (typeof element.action_id !== "string") errors.push(`must be a string [json-pointer:${at}/action_id]`);
    else maxLength(errors, element.action_id, BLOCK_KIT_LIMITS.actionId, `${at}/action_id`);
  }
  if (type === "button") {
    validateText(errors, element.text, `${at}/text`, { max: BLOCK_KIT_LIMITS.buttonText, plainOnly: true });
    if (element.value !== undefined) {
      if (typeof element.value !== "string") errors.push(`must be a string [json-pointer:${at}/value]`);
      else maxLength(errors, element.value, BLOCK_KIT_LIMITS.buttonValue, `${at}/value`);
    }
    if (element.url !== undefined && typeof element.url === "string") maxLength(errors, element.url, BLOCK_KIT_LIMITS.buttonUrl, `${at}/url`);
    if (element.style !== undefined && element.style !== "primary" && element.style !== "danger")
      errors.push(`must be one of: primary, danger [json-pointer:${at}/style]`);
  }
  if (element.confirm !== undefined) {
    const confirm = element.confirm;
    if (!isObject(confirm)) errors.push(`must be an object [json-pointer:${at}/confirm]`);
    else {
      validateText(errors, confirm.title, `${at}/confirm/title`, { max: BLOCK_KIT_LIMITS.confirmTitle, plainOnly: true });
      validateText(errors, confirm.text, `${at}/confirm/text`, { max: BLOCK_KIT_LIMITS.confirmText });
      validateText(errors, confirm.confirm, `${at}/confirm/confirm`, { max: BLOCK_KIT_LIMITS.confirmButton, plainOnly: true });
      validateText(errors, confirm.deny, `${at}/confirm/deny`, { max: BLOCK_KIT_LIMITS.confirmButton, plainOnly: true });
    }
  }
}

function maxLength(errors: string[], value: string, max: number, at: string): void {
  // Counted in UTF-16 code units, which is never fewer than Slack's count: what passes here passes Slack.
  if (value.length > max) errors.push(`must be less than ${max + 1} characters [json-pointer:${at}]`);
}

// -------------------------------------------------------------------- parsing

const JSON_ARGUMENTS = ["blocks", "view", "attachments", "metadata"];

function parseArguments(contentType: string | undefined, raw: string): { body: JsonObject; parseError?: string } {
  const type = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  if (type === "application/json") {
    const parsed: unknown = raw === "" ? {} : JSON.parse(raw);
    if (!isObject(parsed as JsonValue)) return { body: {}, parseError: "invalid_json" };
    return { body: parsed as JsonObject };
  }
  // Slack treats anything else as form data, as the WebClient sends it.
  const body: JsonObject = {};
  for (const [key, value] of new URLSearchParams(raw)) body[key] = value;
  for (const key of JSON_ARGUMENTS) {
    const value = body[key];
    if (typeof value !== "string") continue;
    try {
      body[key] = JSON.parse(value) as JsonValue;
    } catch {
      if (key === "blocks") return { body, parseError: "invalid_blocks_format" };
      if (key === "attachments") return { body, parseError: "invalid_attachments" };
      return { body, parseError: "invalid_arguments" };
    }
  }
  return { body };
}

function parseJsonLoose(raw: string): JsonValue {
  try {
    return JSON.parse(raw) as JsonValue;
  } catch {
    return raw;
  }
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function optionalString(args: JsonObject, key: string): string | undefined {
  const value = args[key];
  if (value === undefined || value === null) return undefined;
  return String(value);
}

function responseMetadata(errors: string[]): JsonObject {
  return { response_metadata: { messages: errors.map((e) => `[ERROR] ${e}`) } };
}

function publicMessage(m: SlackMessage): JsonObject {
  const out: JsonObject = { type: "message", user: m.user, bot_id: m.bot_id, team: m.team, ts: m.ts, text: m.text ?? "" };
  if (m.blocks !== undefined) out.blocks = m.blocks;
  if (m.attachments !== undefined) out.attachments = m.attachments;
  if (m.thread_ts !== undefined) out.thread_ts = m.thread_ts;
  if (m.edited !== undefined) out.edited = m.edited;
  return out;
}

function compareTs(a: string, b: string): number {
  const [as, au] = a.split(".").map(Number) as [number, number];
  const [bs, bu] = b.split(".").map(Number) as [number, number];
  return as - bs || au - bu;
}

function slugify(name: string): string {
  return (
    name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "-")
      .replace(/^-|-$/g, "") || "workspace"
  );
}
