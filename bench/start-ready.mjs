// node bench/start-ready.mjs CLI_JS CWD [LABEL]: runs `node CLI_JS start` in CWD with this environment,
// prints "LABEL ready_s <seconds from spawn to the ready line>", then stops it with SIGINT and waits.
// Whole-process figures: `/usr/bin/time -v node bench/start-ready.mjs …` (peak RSS of the largest process).
// SHOW_OUTPUT=1 prints what start printed.
import { spawn } from "node:child_process";

const [cli, cwd, label = "start"] = process.argv.slice(2);
if (!cli || !cwd) {
  console.error("usage: node bench/start-ready.mjs CLI_JS CWD [LABEL]   (CLI_JS: e.g. dist/cli.js of the build to measure)");
  process.exit(2);
}
const t0 = performance.now();
const child = spawn(process.execPath, [cli, "start"], { cwd, env: process.env, stdio: ["ignore", "pipe", "pipe"] });
let out = "";
let ready = false;
const onData = (d) => {
  out += d;
  if (!ready && /Ctrl-C stops everything/.test(out)) {
    ready = true;
    console.log(`${label} ready_s ${((performance.now() - t0) / 1000).toFixed(3)}`);
    child.kill("SIGINT");
  }
};
child.stdout.on("data", onData);
child.stderr.on("data", onData);
child.on("exit", (code) => {
  if (!ready) {
    console.log(`${label} NOT READY (exit ${code})\n${out}`);
    process.exit(1);
  }
  if (process.env.SHOW_OUTPUT) console.log(out);
  process.exit(code === 0 ? 0 : 1);
});
