import { connect, createServer, type Server, type Socket } from "node:net";

/**
 * A TCP relay to a database whose connections a test can cut, as a network failure would, and
 * whose new connections it can hold up before they reach the server (a slow network, a server
 * slow to accept): a cold connection through it takes `connectDelayMs` to open.
 */
export interface TcpRelay {
  /** `of` with its host and port replaced by the relay's. */
  url(of: string): string;
  /** Destroys every connection through the relay, both sides. */
  cut(): void;
  /**
   * Destroys the client's side of every connection and keeps the server's open, reading and
   * dropping what it sends: a partition the server does not see (no FIN, no RST), as when a
   * network between them fails. `close()` ends those too.
   */
  partition(): void;
  /** How long each new connection waits before the relay connects it on; 0 at first. */
  connectDelayMs: number;
  close(): Promise<void>;
}

export async function tcpRelay(to: URL): Promise<TcpRelay> {
  const sockets = new Set<Socket>();
  const pairs = new Set<{ client: Socket; upstream: Socket }>();
  const timers = new Set<NodeJS.Timeout>();
  const track = (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
    s.on("error", () => {});
  };
  const server: Server = createServer((client) => {
    track(client);
    client.pause();
    const onward = () => {
      if (client.destroyed) return;
      const upstream = connect(Number(to.port || 5432), to.hostname);
      track(upstream);
      const pair = { client, upstream };
      pairs.add(pair);
      client.on("close", () => pairs.delete(pair));
      client.pipe(upstream).pipe(client);
      client.resume();
    };
    if (relay.connectDelayMs <= 0) return onward();
    const timer = setTimeout(() => {
      timers.delete(timer);
      onward();
    }, relay.connectDelayMs);
    timers.add(timer);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  const relay: TcpRelay = {
    url(of) {
      const u = new URL(of);
      u.hostname = "127.0.0.1";
      u.port = String(port);
      return u.toString();
    },
    cut() {
      for (const s of sockets) s.destroy();
    },
    partition() {
      for (const { client, upstream } of [...pairs]) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.destroy();
        upstream.resume();
      }
    },
    connectDelayMs: 0,
    close() {
      for (const t of timers) clearTimeout(t);
      relay.cut();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
  return relay;
}
