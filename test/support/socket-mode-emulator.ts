import { randomBytes, randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { WebSocketServer, type RawData, type WebSocket } from "ws";
import type { JsonObject, SlackEmulator } from "./slack-emulator.ts";
import type { SlackAck, SlackInteractions, SlackPayloads } from "./slack-requests.ts";

/**
 * Slack's side of Socket Mode, for tests, plugged into a SlackEmulator:
 *
 * - `apps.connections.open` (on the emulator's Web API) takes only the app-level token (`xapp-…`)
 *   and answers a one-time `ws://127.0.0.1:PORT/link/?ticket=…` URL;
 * - a WebSocket server that greets each connection with `{"type":"hello",…}`, delivers envelopes
 *   (`{envelope_id, type, payload, accepts_response_payload}`) to the newest greeted connection,
 *   and records acks (`{envelope_id, payload?}`) by envelope id;
 * - an envelope nobody acknowledges within `ackTimeoutMs` is sent again with `retry_attempt` and
 *   `retry_reason: "timeout"`, up to `maxRetries` times, as Slack does (to whichever connection is
 *   open then; with none open it waits for one);
 * - `disconnect()` sends `{"type":"disconnect","reason":"refresh_requested"}`, after which nothing
 *   more is delivered on that connection and the client is expected to open a new one.
 *
 * Slack documents retries for Events API envelopes; the emulator retries every envelope type, so a
 * test can show that a redelivered click or submission still has only one effect.
 */

export type EnvelopeType = "interactive" | "slash_commands" | "events_api";

/** An envelope as it travels on the socket. */
export interface Envelope {
  envelope_id: string;
  type: EnvelopeType;
  payload: JsonObject;
  accepts_response_payload: boolean;
  retry_attempt?: number;
  retry_reason?: string;
}

/** One envelope's life: every attempt, and the ack that settled it. */
export interface Delivery {
  envelopeId: string;
  type: EnvelopeType;
  payload: JsonObject;
  acceptsResponsePayload: boolean;
  /** Every time it was sent, oldest first. */
  attempts: { connection: number; retryAttempt: number; at: Date }[];
  /** The ack that counted: the first one not lost on purpose. */
  ack?: { payload: JsonObject | undefined; connection: number; at: Date };
  /** Acks that arrived and were dropped by `loseNextAcks` (so Slack acts as if none came). */
  lostAcks: number;
  /** Acks that arrived after the one that counted (a redelivered envelope acknowledged again). */
  lateAcks: number;
  /** Every attempt went unacknowledged. */
  gaveUp?: boolean;
}

export interface SocketConnection {
  id: number;
  ticket: string;
  openedAt: Date;
  /** `hello` was sent: the connection may receive envelopes. */
  greeted: boolean;
  /** `disconnect` was sent: nothing more is delivered here. */
  toldToDisconnect?: string;
  closedAt?: Date;
  closeCode?: number;
}

export interface SocketModeEmulatorOptions {
  /** The app-level token `apps.connections.open` accepts. Default `xapp-1-<app id>-1-test`. */
  appToken?: string;
  /** How long an envelope waits for its ack before it is sent again. Default 3000 (Slack's 3 s). */
  ackTimeoutMs?: number;
  /** Redeliveries after the first attempt. Default 3. */
  maxRetries?: number;
}

interface Live {
  ws: WebSocket;
  connection: SocketConnection;
}

interface Pending {
  delivery: Delivery;
  resolve: (delivery: Delivery) => void;
  reject: (err: Error) => void;
  timer?: NodeJS.Timeout;
}

export class SocketModeEmulator {
  /** Every envelope handed to the client, in order. */
  readonly deliveries: Delivery[] = [];
  /** Every WebSocket connection accepted, in order (open and closed). */
  readonly connections: SocketConnection[] = [];
  /** Tickets issued by `apps.connections.open`, in order. */
  readonly tickets: string[] = [];
  /** Messages from the client that Slack would not understand (not JSON, no or unknown envelope_id). */
  readonly strayMessages: string[] = [];
  readonly appToken: string;

  private server: Server | undefined;
  private wss: WebSocketServer | undefined;
  private origin = "";
  private readonly sockets = new Set<Socket>();
  private readonly live = new Map<number, Live>();
  private readonly pending = new Map<string, Pending>();
  /** Deliveries waiting for a greeted connection. */
  private readonly queue: Pending[] = [];
  private readonly unusedTickets = new Set<string>();
  private readonly ackTimeoutMs: number;
  private readonly maxRetries: number;
  private acksToLose = 0;

  constructor(
    private readonly slack: SlackEmulator,
    options: SocketModeEmulatorOptions = {},
  ) {
    this.appToken = options.appToken ?? `xapp-1-${slack.appId}-1-test`;
    this.ackTimeoutMs = options.ackTimeoutMs ?? 3000;
    this.maxRetries = options.maxRetries ?? 3;
  }

  // ---------------------------------------------------------------- lifecycle

  async start(): Promise<void> {
    this.wss = new WebSocketServer({ noServer: true });
    this.server = createServer((_req, res) => res.writeHead(426, { "content-type": "text/plain" }).end("Socket Mode speaks WebSocket only"));
    this.server.on("connection", (socket: Socket) => {
      this.sockets.add(socket);
      socket.on("close", () => this.sockets.delete(socket));
    });
    this.server.on("upgrade", (req, socket, head) => this.upgrade(req, socket as Socket, head));
    await new Promise<void>((resolve, reject) => {
      this.server!.once("error", reject);
      this.server!.listen(0, "127.0.0.1", () => resolve());
    });
    this.origin = `ws://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    this.slack.addMethod(
      "apps.connections.open",
      () => this.openConnection(),
      (token) => {
        // Slack tells a bot or user token apart from an app-level token by its prefix.
        if (!token.startsWith("xapp-")) return "not_allowed_token_type";
        return token === this.appToken ? undefined : "invalid_auth";
      },
    );
  }

  async stop(): Promise<void> {
    for (const p of [...this.pending.values()])
      this.settle(p, new Error(`the Socket Mode emulator stopped before envelope ${p.delivery.envelopeId} was acknowledged`));
    for (const { ws } of this.live.values()) ws.terminate();
    this.live.clear();
    if (!this.server) return;
    const server = this.server;
    this.server = undefined;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    for (const socket of this.sockets) socket.destroy();
    await closed;
    this.wss?.close();
  }

  // ---------------------------------------------------------------- test controls

  /**
   * Hands an envelope to the client and resolves once it is acknowledged (retrying as Slack does);
   * rejects, naming the envelope, when every attempt went unacknowledged.
   */
  deliver(type: EnvelopeType, payload: JsonObject, options: { acceptsResponsePayload?: boolean } = {}): Promise<Delivery> {
    const delivery: Delivery = {
      envelopeId: randomUUID(),
      type,
      payload,
      acceptsResponsePayload: options.acceptsResponsePayload ?? false,
      attempts: [],
      lostAcks: 0,
      lateAcks: 0,
    };
    this.deliveries.push(delivery);
    return new Promise<Delivery>((resolve, reject) => {
      const pending: Pending = { delivery, resolve, reject };
      this.pending.set(delivery.envelopeId, pending);
      this.send(pending);
    });
  }

  /**
   * An Events API event (`app_home_opened` …) wrapped as Slack wraps it (`event_callback`, team,
   * app, event id and times), delivered as an `events_api` envelope; resolves once acknowledged.
   */
  event(event: JsonObject, options: { teamId?: string } = {}): Promise<Delivery> {
    const now = Date.now() / 1000;
    return this.deliver("events_api", {
      type: "event_callback",
      team_id: options.teamId ?? this.slack.teamId,
      api_app_id: this.slack.appId,
      event: { event_ts: now.toFixed(6), ...event },
      event_id: `Ev${randomUUID().replaceAll("-", "").slice(0, 10).toUpperCase()}`,
      event_time: Math.floor(now),
    });
  }

  /** Interactions delivered as envelopes, with the same payloads the HTTP door receives. */
  interactions(payloads: SlackPayloads): SlackInteractions {
    const ackOf = (delivery: Delivery): SlackAck => {
      const response = delivery.ack?.payload;
      return { acked: delivery.ack !== undefined, response: response && Object.keys(response).length > 0 ? response : undefined };
    };
    return {
      door: "socket",
      blockAction: async (input) => ackOf(await this.deliver("interactive", payloads.blockAction(input) as JsonObject)),
      // A modal's ack may carry `response_action` (e.g. field errors), so Slack accepts a response payload.
      viewSubmission: async (input) => ackOf(await this.deliver("interactive", payloads.viewSubmission(input) as JsonObject, { acceptsResponsePayload: true })),
      slashCommand: async (input) => ackOf(await this.deliver("slash_commands", payloads.slashCommand(input), { acceptsResponsePayload: true })),
    };
  }

  /** Sends `{"type":"disconnect"}` on every open connection; returns how many were told. */
  disconnect(reason: "refresh_requested" | "warning" | "link_disabled" = "refresh_requested"): number {
    let told = 0;
    for (const { ws, connection } of this.live.values()) {
      if (connection.toldToDisconnect) continue;
      connection.toldToDisconnect = reason;
      ws.send(JSON.stringify({ type: "disconnect", reason, debug_info: { host: "applink-emulator" } }));
      told += 1;
    }
    return told;
  }

  /** The next `count` acks are dropped as if lost on the way, so their envelopes are sent again. */
  loseNextAcks(count = 1): void {
    this.acksToLose += count;
  }

  /** Connections greeted and not told to go: where the next envelope would be delivered. */
  get openConnections(): SocketConnection[] {
    return [...this.live.values()].map((l) => l.connection).filter((c) => c.greeted && !c.toldToDisconnect);
  }

  // ---------------------------------------------------------------- Slack's side

  private openConnection(): JsonObject {
    const ticket = randomBytes(16).toString("hex");
    this.tickets.push(ticket);
    this.unusedTickets.add(ticket);
    return { url: `${this.origin}/link/?ticket=${ticket}&app_id=${this.slack.appId}` };
  }

  private upgrade(req: IncomingMessage, socket: Socket, head: Buffer): void {
    const url = new URL(req.url ?? "/", "http://x");
    const ticket = url.searchParams.get("ticket") ?? "";
    // A ticket opens one connection: a client that reconnects must call apps.connections.open again.
    if (url.pathname !== "/link/" || !this.unusedTickets.delete(ticket)) {
      socket.end("HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
      return;
    }
    this.wss!.handleUpgrade(req, socket, head, (ws) => {
      const connection: SocketConnection = { id: this.connections.length + 1, ticket, openedAt: new Date(), greeted: false };
      this.connections.push(connection);
      this.live.set(connection.id, { ws, connection });
      ws.on("message", (data, isBinary) => this.received(connection, data, isBinary));
      ws.on("close", (code) => {
        connection.closedAt = new Date();
        connection.closeCode = code;
        this.live.delete(connection.id);
      });
      ws.send(
        JSON.stringify({
          type: "hello",
          num_connections: this.live.size,
          debug_info: { host: "applink-emulator", build_number: 1, approximate_connection_time: 18060 },
          connection_info: { app_id: this.slack.appId },
        }),
      );
      connection.greeted = true;
      this.flush();
    });
  }

  private received(connection: SocketConnection, data: RawData, isBinary: boolean): void {
    const text = isBinary ? "<binary>" : rawText(data);
    let message: { envelope_id?: unknown; payload?: unknown };
    try {
      message = JSON.parse(text) as typeof message;
    } catch {
      this.strayMessages.push(text);
      return;
    }
    const envelopeId = typeof message.envelope_id === "string" ? message.envelope_id : undefined;
    const delivery = envelopeId === undefined ? undefined : this.deliveries.find((d) => d.envelopeId === envelopeId);
    if (!delivery) {
      this.strayMessages.push(text);
      return;
    }
    if (delivery.ack) {
      delivery.lateAcks += 1;
      return;
    }
    if (this.acksToLose > 0) {
      this.acksToLose -= 1;
      delivery.lostAcks += 1;
      return;
    }
    const payload = message.payload;
    delivery.ack = { payload: isJsonObject(payload) ? payload : undefined, connection: connection.id, at: new Date() };
    const pending = this.pending.get(delivery.envelopeId);
    if (pending) this.settle(pending);
  }

  private send(pending: Pending): void {
    const target = [...this.live.values()].reverse().find((l) => l.connection.greeted && !l.connection.toldToDisconnect && l.ws.readyState === l.ws.OPEN);
    if (!target) {
      this.queue.push(pending);
      return;
    }
    const { delivery } = pending;
    const retryAttempt = delivery.attempts.length;
    const envelope: Envelope = {
      envelope_id: delivery.envelopeId,
      type: delivery.type,
      payload: delivery.payload,
      accepts_response_payload: delivery.acceptsResponsePayload,
      ...((delivery.type === "events_api" || retryAttempt > 0) && { retry_attempt: retryAttempt, retry_reason: retryAttempt > 0 ? "timeout" : "" }),
    };
    delivery.attempts.push({ connection: target.connection.id, retryAttempt, at: new Date() });
    target.ws.send(JSON.stringify(envelope));
    pending.timer = setTimeout(() => {
      pending.timer = undefined;
      if (delivery.ack) return;
      if (delivery.attempts.length > this.maxRetries) {
        delivery.gaveUp = true;
        this.settle(pending, new Error(`envelope ${delivery.envelopeId} (${delivery.type}) was not acknowledged after ${delivery.attempts.length} attempts`));
        return;
      }
      this.send(pending);
    }, this.ackTimeoutMs);
  }

  private flush(): void {
    for (const pending of this.queue.splice(0)) this.send(pending);
  }

  private settle(pending: Pending, err?: Error): void {
    clearTimeout(pending.timer);
    this.pending.delete(pending.delivery.envelopeId);
    const queued = this.queue.indexOf(pending);
    if (queued >= 0) this.queue.splice(queued, 1);
    if (err) pending.reject(err);
    else pending.resolve(pending.delivery);
  }
}

function rawText(data: RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString("utf8");
  return Buffer.from(data as ArrayBuffer).toString("utf8");
}

function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
