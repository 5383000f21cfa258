/**
 * A preload that logs every socket write and read of the process, and each HTTP request's start,
 * with its epoch time in ms (to the µs), to /tmp/socket-trace/<pid>.log: where a click's time
 * goes between processes. With bench/approve-timeline.ts, whose lines end with each click's epoch:
 *   BENCH_SERVE_NODE_ARGS="--import $PWD/bench/socket-trace.mjs" \
 *   BENCH_EXECUTOR_NODE_ARGS="--import $PWD/bench/socket-trace.mjs" \
 *   node --import tsx bench/approve-timeline.ts 30
 * then read each log from a click's epoch on: `W`/`R` are writes and reads (local>remote port,
 * bytes, the first 40 printable bytes), `H` an HTTP request's start (its headers parsed), `M` a
 * mark (`globalThis.__mark?.("label")`, put in the built code under study for a run and taken out
 * after), and one `T` row at start: the epoch time with the CLOCK_MONOTONIC µs a CPU profile
 * (`--cpu-prof`) stamps its samples with, to find the samples between two rows.
 * Costs a few µs per socket operation; use it to find gaps, not to measure totals.
 */
import dc from "node:diagnostics_channel";
import fs from "node:fs";
import net from "node:net";

const DIR = "/tmp/socket-trace";
fs.mkdirSync(DIR, { recursive: true });
const file = `${DIR}/${process.pid}.log`;
const rows = [];
const now = () => (performance.timeOrigin + performance.now()).toFixed(3);
const ends = (socket) => `${socket.localPort}>${socket.remotePort}`;
const peek = (chunk) => {
  const text = typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("latin1");
  return text.slice(0, 40).replace(/[^\x20-\x7e]/g, ".");
};

const write = net.Socket.prototype.write;
net.Socket.prototype.write = function (chunk, ...rest) {
  rows.push(`${now()} W ${ends(this)} ${chunk?.length ?? 0} ${chunk ? peek(chunk) : ""}`);
  return write.call(this, chunk, ...rest);
};
const push = net.Socket.prototype.push;
net.Socket.prototype.push = function (chunk, ...rest) {
  if (chunk) rows.push(`${now()} R ${ends(this)} ${chunk.length} ${peek(chunk)}`);
  return push.call(this, chunk, ...rest);
};
// The HTTP server's parser reads its sockets past push(): a request's start is logged here.
dc.subscribe("http.server.request.start", ({ request }) => rows.push(`${now()} H ${ends(request.socket)} 0 ${request.method} ${request.url}`));

globalThis.__mark = (label) => rows.push(`${now()} M ${label}`);
rows.push(`${now()} T ${process.hrtime.bigint() / 1000n}`);

const flush = () => {
  if (rows.length === 0) return;
  fs.appendFileSync(file, `${rows.join("\n")}\n`);
  rows.length = 0;
};
setInterval(flush, 2000).unref();
process.on("exit", flush);
