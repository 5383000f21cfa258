import { createHmac, randomBytes } from "node:crypto";

/**
 * Sends requests to Countersign's `POST /slack/events` the way Slack does: form-encoded bodies
 * (content type exactly `application/x-www-form-urlencoded`), signed with the app's signing
 * secret (`X-Slack-Signature: v0=<hex HMAC-SHA256(secret, "v0:<timestamp>:<raw body>")>`,
 * `X-Slack-Request-Timestamp`). Options forge, age, strip or alter requests, and `replay()`
 * sends the exact same bytes and headers again.
 */

/** Slack's request signature: `v0=` + hex HMAC-SHA256 of `v0:<timestamp>:<body>` keyed with the signing secret. */
export function signSlackRequest(signingSecret: string, timestamp: number | string, body: string | Uint8Array): string {
  const hmac = createHmac("sha256", signingSecret);
  hmac.update(`v0:${timestamp}:`);
  hmac.update(body);
  return `v0=${hmac.digest("hex")}`;
}

export const FORM_CONTENT_TYPE = "application/x-www-form-urlencoded";

export interface SendOptions {
  /** `X-Slack-Request-Timestamp` (seconds), and the one signed. Default: now by the client's clock. */
  timestamp?: number | string;
  /** Sign with this secret instead of the configured one (a forged request). */
  signingSecret?: string;
  /** Send exactly this `X-Slack-Signature`. */
  signature?: string;
  /** Change one hex digit of the (otherwise correct) signature. */
  corruptSignature?: boolean;
  /** Leave these headers out. Without `content-type`, fetch sends `text/plain;charset=UTF-8`. */
  omit?: ("signature" | "timestamp" | "content-type")[];
  /** Send this content type instead (the signature still covers the same body). */
  contentType?: string;
  /** After signing, change one byte of the body: at this index (`true`: the middle). A letter or digit is swapped for another, so the body stays well-formed. */
  changeBodyByte?: boolean | number;
  /** Extra headers (e.g. `X-Slack-Retry-Num`), set last. */
  headers?: Record<string, string>;
}

/** A request as it was sent: enough to send the exact same bytes again. */
export interface SentRequest {
  url: string;
  headers: Record<string, string>;
  body: Buffer;
  /** The body as text (what was signed, unless `changeBodyByte` altered it afterwards). */
  text: string;
  timestamp: string;
}

export interface SlackUserRef {
  id: string;
  username?: string;
  /** The user's home workspace. Default: the client's team id. */
  teamId?: string;
}

export interface BlockActionInput {
  user: SlackUserRef | string;
  actionId: string;
  value?: string;
  blockId?: string;
  channelId?: string;
  /** The ts of the message the button is on. */
  messageTs: string;
  /** The message as Slack includes it in the payload (ts, text, blocks…). Default `{ ts, type: "message", text: "" }`. */
  message?: Record<string, unknown>;
  triggerId?: string;
  responseUrl?: string;
  /** `team.id` of the payload (the workspace the click came from). Default: the client's team id. */
  teamId?: string;
  /** Shallow overrides of the whole payload. */
  payload?: Record<string, unknown>;
}

export interface ViewSubmissionInput {
  user: SlackUserRef | string;
  callbackId: string;
  privateMetadata?: string;
  /** `state.values`. Default from `reason`: `{ reason: { reason: { type: "plain_text_input", value } } }`. */
  values?: Record<string, Record<string, Record<string, unknown>>>;
  /** Shortcut for the reject modal's reason input. */
  reason?: string;
  viewId?: string;
  triggerId?: string;
  teamId?: string;
  payload?: Record<string, unknown>;
}

export interface SlashCommandInput {
  user: SlackUserRef | string;
  command?: string;
  text?: string;
  channelId?: string;
  channelName?: string;
  triggerId?: string;
  responseUrl?: string;
  teamId?: string;
  /** Extra or overriding form fields. */
  fields?: Record<string, string>;
}

/** What a payload says about the workspace and app it came from, and when. */
export interface SlackPayloadOptions {
  /** Default `T0TEST`. */
  teamId?: string;
  /** Default `countersign-test`. */
  teamDomain?: string;
  /** Default `A0COUNTERSIGN`. */
  appId?: string;
  /** The default `response_url` (e.g. `emulator.responseUrl()`). Default: a hooks.slack.com-shaped URL nothing answers. */
  responseUrl?: () => string;
  /** Milliseconds since the epoch, for the default timestamp and `action_ts`. Default `Date.now`. */
  now?: () => number;
}

export interface SlackRequestsOptions extends SlackPayloadOptions {
  /** Countersign's base URL, e.g. `http://127.0.0.1:PORT` (no trailing path). */
  baseUrl: string;
  signingSecret: string;
  /** Default `/slack/events`. */
  path?: string;
}

/**
 * What Slack got back when it handed Countersign an interaction, whichever door it came through:
 * the HTTP answer to `POST /slack/events`, or the ack of a Socket Mode envelope.
 */
export interface SlackAck {
  /** HTTP 200, or an ack with the envelope's id. */
  acked: boolean;
  /** The response payload (a modal's `response_action`, a slash command's message); undefined when empty. */
  response: Record<string, unknown> | undefined;
}

/** Delivers interactions to Countersign the way Slack does through one door (HTTP or Socket Mode). */
export interface SlackInteractions {
  readonly door: "http" | "socket";
  /** A button click (`block_actions`). */
  blockAction(input: BlockActionInput): Promise<SlackAck>;
  /** A modal submitted (`view_submission`). */
  viewSubmission(input: ViewSubmissionInput): Promise<SlackAck>;
  /** A slash command. */
  slashCommand(input: SlashCommandInput): Promise<SlackAck>;
}

/** Interactions over HTTP: signed `POST /slack/events` requests. */
export function httpInteractions(requests: SlackRequests): SlackInteractions {
  const ackOf = async (res: Response): Promise<SlackAck> => {
    const text = await res.text();
    // A listener may ack with a plain string, which Slack shows as the message text.
    const json = (res.headers.get("content-type") ?? "").startsWith("application/json");
    return { acked: res.status === 200, response: text === "" ? undefined : json ? (JSON.parse(text) as Record<string, unknown>) : { text } };
  };
  return {
    door: "http",
    blockAction: async (input) => ackOf(await requests.blockAction(input)),
    viewSubmission: async (input) => ackOf(await requests.viewSubmission(input)),
    slashCommand: async (input) => ackOf(await requests.slashCommand(input)),
  };
}

/** The payloads Slack sends for clicks, modal submissions and slash commands, the same through either door. */
export class SlackPayloads {
  private readonly teamId: string;
  private readonly teamDomain: string;
  private readonly appId: string;
  private readonly now: () => number;

  constructor(private readonly options: SlackPayloadOptions = {}) {
    this.teamId = options.teamId ?? "T0TEST";
    this.teamDomain = options.teamDomain ?? "countersign-test";
    this.appId = options.appId ?? "A0COUNTERSIGN";
    this.now = options.now ?? Date.now;
  }

  blockAction(input: BlockActionInput): Record<string, unknown> {
    const user = this.userOf(input.user);
    const channelId = input.channelId ?? "C0REVIEW";
    const teamId = input.teamId ?? this.teamId;
    const message = { type: "message", ts: input.messageTs, text: "", ...input.message };
    return {
      type: "block_actions",
      user,
      api_app_id: this.appId,
      token: "verification-token-unused",
      container: { type: "message", message_ts: input.messageTs, channel_id: channelId, is_ephemeral: false },
      trigger_id: input.triggerId ?? triggerId(),
      team: { id: teamId, domain: this.teamDomain },
      enterprise: null,
      is_enterprise_install: false,
      channel: { id: channelId, name: "countersign-review" },
      message,
      state: { values: {} },
      response_url: input.responseUrl ?? this.responseUrl(),
      actions: [
        {
          action_id: input.actionId,
          block_id: input.blockId ?? "plan_actions",
          text: { type: "plain_text", text: input.actionId, emoji: true },
          ...(input.value !== undefined && { value: input.value }),
          type: "button",
          action_ts: actionTs(this.now()),
        },
      ],
      ...input.payload,
    };
  }

  viewSubmission(input: ViewSubmissionInput): Record<string, unknown> {
    const user = this.userOf(input.user);
    const teamId = input.teamId ?? this.teamId;
    const values = input.values ?? (input.reason !== undefined ? { reason: { reason: { type: "plain_text_input", value: input.reason } } } : {});
    return {
      type: "view_submission",
      team: { id: teamId, domain: this.teamDomain },
      user,
      api_app_id: this.appId,
      token: "verification-token-unused",
      trigger_id: input.triggerId ?? triggerId(),
      view: {
        id: input.viewId ?? `V${randomBytes(5).toString("hex").toUpperCase()}`,
        team_id: teamId,
        type: "modal",
        blocks: [],
        private_metadata: input.privateMetadata ?? "",
        callback_id: input.callbackId,
        state: { values },
        hash: `${Math.floor(this.now() / 1000)}.${randomBytes(4).toString("hex")}`,
        title: { type: "plain_text", text: "Countersign" },
        app_id: this.appId,
        bot_id: "B0BOT",
      },
      response_urls: [],
      is_enterprise_install: false,
      enterprise: null,
      ...input.payload,
    };
  }

  slashCommand(input: SlashCommandInput): Record<string, string> {
    const user = this.userOf(input.user);
    return {
      token: "verification-token-unused",
      team_id: input.teamId ?? this.teamId,
      team_domain: this.teamDomain,
      channel_id: input.channelId ?? "C0REVIEW",
      channel_name: input.channelName ?? "countersign-review",
      user_id: user.id,
      user_name: user.username,
      command: input.command ?? "/countersign",
      text: input.text ?? "",
      api_app_id: this.appId,
      is_enterprise_install: "false",
      response_url: input.responseUrl ?? this.responseUrl(),
      trigger_id: input.triggerId ?? triggerId(),
      ...input.fields,
    };
  }

  private userOf(user: SlackUserRef | string): { id: string; username: string; name: string; team_id: string } {
    const ref = typeof user === "string" ? { id: user } : user;
    const username = ref.username ?? ref.id.toLowerCase();
    return { id: ref.id, username, name: username, team_id: ref.teamId ?? this.teamId };
  }

  private responseUrl(): string {
    return this.options.responseUrl?.() ?? `https://hooks.slack.com/actions/${this.teamId}/${Date.now()}/${randomBytes(12).toString("hex")}`;
  }
}

/** Sends requests to `POST /slack/events` as Slack does (see the top of this file). */
export class SlackRequests {
  /** Every request sent, in order. */
  readonly sent: SentRequest[] = [];
  readonly url: string;
  readonly payloads: SlackPayloads;

  constructor(private readonly options: SlackRequestsOptions) {
    this.url = `${options.baseUrl.replace(/\/$/, "")}${options.path ?? "/slack/events"}`;
    this.payloads = new SlackPayloads(options);
  }

  get last(): SentRequest | undefined {
    return this.sent.at(-1);
  }

  /** A button click (`block_actions`). */
  blockAction(input: BlockActionInput, options: SendOptions = {}): Promise<Response> {
    return this.sendPayload(this.blockActionPayload(input), options);
  }

  /** A modal submitted (`view_submission`), e.g. the reject modal with its reason. */
  viewSubmission(input: ViewSubmissionInput, options: SendOptions = {}): Promise<Response> {
    return this.sendPayload(this.viewSubmissionPayload(input), options);
  }

  /** A slash command, e.g. `/countersign list`. */
  slashCommand(input: SlashCommandInput, options: SendOptions = {}): Promise<Response> {
    return this.send(new URLSearchParams(this.slashCommandFields(input)).toString(), options);
  }

  /** Sends `payload=<JSON>` form-encoded, as Slack sends interactions. */
  sendPayload(payload: Record<string, unknown>, options: SendOptions = {}): Promise<Response> {
    return this.send(new URLSearchParams({ payload: JSON.stringify(payload) }).toString(), options);
  }

  /** Signs and sends `body` as is. */
  async send(body: string, options: SendOptions = {}): Promise<Response> {
    const timestamp = String(options.timestamp ?? Math.floor((this.options.now ?? Date.now)() / 1000));
    let signature = options.signature ?? signSlackRequest(options.signingSecret ?? this.options.signingSecret, timestamp, body);
    if (options.corruptSignature) signature = corruptHex(signature);
    let bytes: Buffer = Buffer.from(body, "utf8");
    if (options.changeBodyByte !== undefined && options.changeBodyByte !== false) {
      bytes = changeOneByte(bytes, options.changeBodyByte === true ? Math.floor(bytes.length / 2) : options.changeBodyByte);
    }
    const omit = new Set(options.omit ?? []);
    const headers: Record<string, string> = {};
    if (!omit.has("content-type")) headers["content-type"] = options.contentType ?? FORM_CONTENT_TYPE;
    if (!omit.has("timestamp")) headers["x-slack-request-timestamp"] = timestamp;
    if (!omit.has("signature")) headers["x-slack-signature"] = signature;
    Object.assign(headers, options.headers);
    const sent: SentRequest = { url: this.url, headers, body: bytes, text: body, timestamp };
    this.sent.push(sent);
    return post(sent);
  }

  /** Sends the exact same bytes with the exact same headers again (default: the last request). */
  replay(request: SentRequest | undefined = this.last): Promise<Response> {
    if (!request) throw new Error("nothing to replay: no request was sent");
    this.sent.push(request);
    return post(request);
  }

  blockActionPayload(input: BlockActionInput): Record<string, unknown> {
    return this.payloads.blockAction(input);
  }

  viewSubmissionPayload(input: ViewSubmissionInput): Record<string, unknown> {
    return this.payloads.viewSubmission(input);
  }

  slashCommandFields(input: SlashCommandInput): Record<string, string> {
    return this.payloads.slashCommand(input);
  }
}

function post(request: SentRequest): Promise<Response> {
  return fetch(request.url, { method: "POST", headers: request.headers, body: request.body });
}

function triggerId(): string {
  return `${Date.now()}.${randomBytes(4).readUInt32BE()}.${randomBytes(16).toString("hex")}`;
}

function actionTs(nowMs: number): string {
  return `${Math.floor(nowMs / 1000)}.${String(nowMs % 1000).padStart(3, "0")}${String(Math.floor(Math.random() * 1000)).padStart(3, "0")}`;
}

function corruptHex(signature: string): string {
  const last = signature.at(-1) ?? "0";
  return signature.slice(0, -1) + (last === "0" ? "1" : "0");
}

/** Changes the first letter or digit at or after `index` (wrapping, skipping %XX escapes) into another of its kind. */
function changeOneByte(bytes: Buffer, index: number): Buffer {
  const out = Buffer.from(bytes);
  for (let k = 0; k < out.length; k++) {
    const i = (index + k) % out.length;
    const c = out[i]!;
    const isDigit = c >= 0x30 && c <= 0x39;
    const isLetter = (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
    const inEscape = out[i - 1] === 0x25 || out[i - 2] === 0x25; // part of a %XX escape
    if ((!isDigit && !isLetter) || inEscape) continue;
    out[i] = isDigit ? (c === 0x39 ? 0x30 : c + 1) : c === 0x7a ? 0x61 : c === 0x5a ? 0x41 : c + 1;
    return out;
  }
  throw new Error("changeBodyByte: the body has no letter or digit to change");
}
