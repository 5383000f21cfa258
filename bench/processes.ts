import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
let productRoot = ROOT;

/**
 * Measure the Countersign built in another checkout (`--product DIR`: its `dist/cli.js`), e.g. a
 * worktree of an older commit, while the harness and its floors stay this checkout's.
 */
export function useProduct(dir: string): void {
  const root = path.resolve(dir);
  if (!existsSync(path.join(root, "dist", "cli.js")))
    throw new Error(`--product ${dir}: no dist/cli.js there; build it first (node scripts/build.mjs in that checkout)`);
  productRoot = root;
}

/** The checkout whose Countersign is measured (this one unless `--product` named another). */
export function productDir(): string {
  return productRoot;
}

/** The command a user runs: the built CLI, or the sources through tsx when dist/ was never built (noted beside each figure). */
export function countersignCommand(): { args: string[]; note?: string } {
  const built = path.join(productRoot, "dist", "cli.js");
  if (existsSync(built)) return { args: [built], ...(productRoot === ROOT ? {} : { note: `product ${productRoot}` }) };
  // tsx resolved here: `--import tsx` would look for it from the child's working directory.
  return {
    args: ["--import", import.meta.resolve("tsx"), fileURLToPath(new URL("../src/cli.ts", import.meta.url))],
    note: "no dist/cli.js: CLI run through tsx; npm run build first",
  };
}

/** Runs `node args…` to completion and returns its stdout; throws with the output when the exit code is not 0. */
export function outputOf(args: string[], options: { cwd: string; env: NodeJS.ProcessEnv }): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: options.cwd, env: options.env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(stdout) : reject(new Error(`node ${args.join(" ")} exited ${code}:\n${stdout}${stderr}`))));
  });
}

/** A clean environment, so the developer's DATABASE_URL or Slack tokens never change what is measured. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const { PATH, HOME, TMPDIR } = process.env;
  return { PATH, HOME, TMPDIR, LOG_LEVEL: "warn", ...extra };
}

/** Seconds from spawn to exit; throws with the output when the exit code is not 0. */
export function timeToExit(args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, args, { cwd: options.cwd ?? ROOT, env: options.env ?? cleanEnv(), stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => {
      const seconds = (performance.now() - started) / 1000;
      if (code === 0) resolve(seconds);
      else reject(new Error(`node ${args.join(" ")} exited ${code}:\n${output}`));
    });
  });
}

export interface Started {
  child: ChildProcess;
  /** Seconds from spawn until the output matched `ready`. */
  readySeconds: number;
  output(): string;
  /** SIGINT, as Ctrl-C would (SIGKILL after 30 s); then ends any child it left behind (an executor whose parent crashed). */
  stop(): Promise<void>;
}

/** Spawns `node args…` and resolves once its output matches `ready` (or rejects with the output after `timeoutMs`). */
export function startUntilReady(args: string[], options: { cwd: string; env: NodeJS.ProcessEnv; ready: RegExp; timeoutMs?: number }): Promise<Started> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, args, { cwd: options.cwd, env: options.env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    let ready = false;
    // "exit", not "close": an orphaned child that inherited the pipes would hold "close" off forever.
    const exited = new Promise<void>((r) => child.on("exit", () => r()));
    const killTree = (signal: NodeJS.Signals) => {
      for (const pid of processTree(child.pid!).reverse()) {
        try {
          process.kill(pid, signal);
        } catch {
          // already gone
        }
      }
    };
    const timer = setTimeout(() => {
      killTree("SIGKILL");
      reject(new Error(`not ready after ${options.timeoutMs ?? 120_000} ms: node ${args.join(" ")}\n${output}`));
    }, options.timeoutMs ?? 120_000);
    const onData = (d: Buffer) => {
      output += d.toString();
      if (ready || !options.ready.test(output)) return;
      ready = true;
      clearTimeout(timer);
      resolve({
        child,
        readySeconds: (performance.now() - started) / 1000,
        output: () => output,
        stop: async () => {
          // Each with its start time, so a pid reused by someone else's process after ours ended is left alone.
          const descendants = processTree(child.pid!)
            .slice(1)
            .map((pid) => ({ pid, started: startTime(pid) }));
          if (child.exitCode === null && child.signalCode === null) {
            const kill = setTimeout(() => killTree("SIGKILL"), 30_000);
            child.kill("SIGINT");
            await exited;
            clearTimeout(kill);
          }
          for (const { pid, started } of descendants) {
            if (started === undefined || startTime(pid) !== started) continue; // it stopped with its parent, as it should
            try {
              process.kill(pid, "SIGKILL");
            } catch {
              // gone meanwhile
            }
          }
        },
      });
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    void exited.then(() => {
      clearTimeout(timer);
      if (!ready) reject(new Error(`exited (${child.exitCode}) before it was ready: node ${args.join(" ")}\n${output}`));
    });
  });
}

/** The fields of /proc/PID/stat after the command name (which may hold spaces and parentheses). */
function statFields(pid: number | string): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined; // exited
  }
}

/** When the process started (clock ticks since boot): with the pid, what identifies it. */
function startTime(pid: number): string | undefined {
  return statFields(pid)?.[19];
}

/** A process and all its descendants, from /proc (Linux only). */
export function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = statFields(entry);
    if (!fields) continue;
    const ppid = Number(fields[1]);
    children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
  }
  const tree = [root];
  for (let i = 0; i < tree.length; i++) tree.push(...(children.get(tree[i]!) ?? []));
  return tree;
}

export function rssMb(pid: number): number {
  try {
    const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
    return kb ? Number(kb) / 1024 : 0;
  } catch {
    return 0; // exited
  }
}

export function treeRssMb(root: number): { mb: number; processes: number } {
  const tree = processTree(root);
  return { mb: tree.reduce((sum, pid) => sum + rssMb(pid), 0), processes: tree.length };
}

/**
 * The tree's RSS once it stops moving: sampled every 500 ms until four samples in a row lie
 * within 2 % of each other and at least `minProcesses` processes run (the executor child starts
 * after the banner), or the last sample after `timeoutMs`.
 */
export async function settledTreeRssMb(root: number, options: { minProcesses?: number; timeoutMs?: number } = {}): Promise<number> {
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  const samples: number[] = [];
  for (;;) {
    const { mb, processes } = treeRssMb(root);
    if (processes >= (options.minProcesses ?? 1)) samples.push(mb);
    const last = samples.slice(-4);
    if (last.length === 4 && Math.max(...last) <= Math.min(...last) * 1.02) return last.at(-1)!;
    if (Date.now() > deadline) {
      if (samples.length === 0) throw new Error(`process ${root} never had ${options.minProcesses} processes in its tree`);
      return samples.at(-1)!;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** The RSS of an idle bare `node` on this machine: the floor any Countersign process stands on. */
export async function idleNodeRssMb(): Promise<number> {
  const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 60_000)"], { stdio: "ignore" });
  try {
    return await settledTreeRssMb(child.pid!);
  } finally {
    child.kill("SIGKILL");
  }
}
