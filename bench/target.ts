/**
 * The fake target as its own process, as a real target is: the `http.json` resource server with
 * contacts `/contacts/1` … `/contacts/N`, so neither the product nor the floor shares a CPU with
 * it through the bench's own event loop. Run by stack.ts over IPC:
 *   node --import tsx bench/target.ts N READ_TOKEN WRITE_TOKEN
 * Sends { url } once listening, then { write: path, at } for every write, `at` in epoch
 * milliseconds (performance.timeOrigin + performance.now()), comparable across processes.
 */
import { JsonResourceServer } from "../src/demo/json-resource-server.ts";

const [contacts, readToken, writeToken] = process.argv.slice(2);
if (!contacts || !readToken || !writeToken || !process.send) {
  console.error("usage (from stack.ts, with an IPC channel): target.ts CONTACTS READ_TOKEN WRITE_TOKEN");
  process.exit(2);
}
const seed: Record<string, { name: string; email: string }> = {};
for (let i = 1; i <= Number(contacts); i++) seed[`/contacts/${i}`] = { name: `Contact ${i}`, email: `c${i}@old.example` };
/**
 * Idle connections are kept 65 s (announced as `Keep-Alive: timeout=65`, which fetch honours, less
 * a second), as production HTTP servers and load balancers keep them (nginx 75 s, AWS ALB 60 s),
 * not node's 5 s: the approve figure's clicks come ~5 s apart, and with 5 s each of the product's
 * GETs would open a connection while the floor's back-to-back requests never do.
 */
const KEEP_ALIVE_MS = 65_000;
const target = new JsonResourceServer({ seed, readTokens: [readToken], writeToken, keepAliveTimeoutMs: KEEP_ALIVE_MS });
target.beforeHandle = (request) => {
  const at = performance.timeOrigin + performance.now();
  target.requests.length = 0; // it keeps every request; a long run would hold them all
  if (request.method !== "GET") process.send!({ write: request.path, at });
};
const url = await target.start();
process.send({ url });
process.on("disconnect", () => void target.stop().then(() => process.exit(0)));
