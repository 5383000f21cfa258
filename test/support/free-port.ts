import { readFileSync } from "node:fs";
import { createServer } from "node:net";

/**
 * Ports are picked below the kernel's ephemeral range. A port the kernel hands out for `listen(0)`
 * comes from that range, and so does every outgoing connection's local port: once such a port is
 * closed again, a client socket anywhere on the machine (a parallel test's fetch, a driver's
 * connection) can take it before the child process binds it, and `countersign start` then
 * refuses its PORT as in use. Below the range only another listener can
 * hold it, and the bind below checks that.
 */
const LOWEST = 20_000;

function ephemeralStart(): number {
  try {
    const [start] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/).map(Number);
    if (start !== undefined && Number.isInteger(start) && start > LOWEST + 1000) return start;
  } catch {
    // not Linux: the IANA dynamic range starts at 49152, Linux's default at 32768
  }
  return 32_768;
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", (err: NodeJS.ErrnoException) => (err.code === "EADDRINUSE" || err.code === "EACCES" ? resolve(false) : reject(err)));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** A TCP port free on 127.0.0.1 right now, for a process that must be told its PORT before it starts. */
export async function freePort(): Promise<number> {
  const end = ephemeralStart();
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = LOWEST + Math.floor(Math.random() * (end - LOWEST));
    if (await bindable(port)) return port;
  }
  throw new Error(`freePort: no free port found between ${LOWEST} and ${end - 1} in 200 tries`);
}
