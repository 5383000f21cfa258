/**
 * Reads the logs of bench/socket-trace.mjs (/tmp/socket-trace/<pid>.log) around one click:
 *   node bench/trace-timeline.mjs EPOCH [MS]
 * prints every process's rows from 1 ms before EPOCH (a click's, as approve-timeline prints it)
 * to MS after (default 25), merged in time order, as ms after EPOCH and the pid.
 *   node bench/trace-timeline.mjs EPOCH [MS] --profile FILE.cpuprofile --from "M s:a" --to "W 5432"
 * also prints where that process's CPU went between the first row matching `--from` and the next
 * matching `--to` (`M label` a mark, `W port` / `R port` a write or read with that remote port:
 * `W 5432` is the next write to PostgreSQL): its samples' three innermost frames, most sampled
 * first. The profile must be of
 * the same process (node's file name says its pid), run with the preload as well (its `T` row
 * lines the two clocks up).
 */
import fs from "node:fs";
import path from "node:path";

const DIR = "/tmp/socket-trace";
const args = process.argv.slice(2);
const option = (name) => {
  const at = args.indexOf(name);
  if (at < 0) return undefined;
  const [, value] = args.splice(at, 2);
  if (value === undefined) throw new Error(`${name} needs a value`);
  return value;
};
const profile = option("--profile");
const from = option("--from");
const to = option("--to");
const epoch = Number(args[0]);
const span = Number(args[1] ?? 25);
if (!Number.isFinite(epoch) || !Number.isFinite(span)) throw new Error("usage: node bench/trace-timeline.mjs EPOCH [MS] [--profile FILE --from ROW --to ROW]");

const logs = fs
  .readdirSync(DIR)
  .filter((f) => f.endsWith(".log"))
  .map((f) => ({
    pid: path.basename(f, ".log"),
    rows: fs
      .readFileSync(path.join(DIR, f), "utf8")
      .trim()
      .split("\n")
      .map((line) => line.split(" ")),
  }));
const near = logs.flatMap(({ pid, rows }) => rows.filter((r) => Number(r[0]) >= epoch - 1 && Number(r[0]) <= epoch + span).map((r) => ({ pid, r })));
near.sort((a, b) => Number(a.r[0]) - Number(b.r[0]));
for (const { pid, r } of near) console.log(`${(Number(r[0]) - epoch).toFixed(2).padStart(8)} ${pid} ${r.slice(1).join(" ")}`);

if ((from || to) && !profile) throw new Error("--from and --to are read with --profile");
if (profile) {
  if (!from || !to) throw new Error("--profile needs --from and --to");
  const p = JSON.parse(fs.readFileSync(profile, "utf8"));
  // `W 5432`: a write whose remote port is 5432; `M s:a`: the mark s:a.
  const matches = (r, row) => {
    const [kind, field] = row.split(" ");
    return r[1] === kind && (kind === "M" ? r[2] === field : (r[2] ?? "").split(">")[1] === field);
  };
  // node names a profile CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile (unless --cpu-prof-name).
  const pid = path.basename(profile).split(".")[3];
  const log = logs.find((l) => l.pid === pid);
  // Logs are appended to: a pid used again has an older process's rows first. Its own T row is the last before EPOCH.
  const t = log?.rows.findLast((r) => r[1] === "T" && Number(r[0]) <= epoch);
  if (!log || !t) throw new Error(`no trace log with a T row for process ${pid}: run it with bench/socket-trace.mjs as well as --cpu-prof`);
  const monoMs = (epochMs) => Number(t[2]) / 1000 + (epochMs - Number(t[0]));
  const mine = log.rows.filter((r) => Number(r[0]) >= epoch && Number(r[0]) <= epoch + span);
  const a = mine.find((r) => matches(r, from));
  const b = a && mine.find((r) => Number(r[0]) > Number(a[0]) && matches(r, to));
  if (!a || !b) throw new Error(`no '${from}' row followed by a '${to}' row in process ${log.pid} within ${span} ms of EPOCH`);
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map(p.nodes.flatMap((n) => (n.children ?? []).map((c) => [c, n.id])));
  const frame = (n) => `${n.callFrame.functionName || "(anonymous)"} ${path.basename(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;
  const lo = monoMs(Number(a[0])),
    hi = monoMs(Number(b[0]));
  const counts = new Map();
  let at = p.startTime;
  let samples = 0;
  p.samples.forEach((id, i) => {
    at += p.timeDeltas[i];
    if (at / 1000 < lo || at / 1000 > hi) return;
    samples++;
    const frames = [];
    for (let x = id; x !== undefined && frames.length < 3; x = parent.get(x)) frames.push(frame(byId.get(x)));
    const key = frames.join(" < ");
    counts.set(key, (counts.get(key) ?? 0) + 1);
  });
  console.log(`\n${log.pid}: '${from}' → '${to}': ${(hi - lo).toFixed(2)} ms, ${samples} samples`);
  for (const [key, n] of [...counts].sort((x, y) => y[1] - x[1]).slice(0, 12)) console.log(`${String(n).padStart(5)}  ${key}`);
}
