/**
 * Floors with the product's process boundaries. Intake: the bench POSTs the plan request
 * it sends the product to a bare node:http process that reads the agent's key, GETs the target and
 * runs the intake floor's statement (`floorSubmit`, bench/process-floor-child.ts `intake`), 8 in
 * flight like the product.
 *
 * Approve → PATCH: Countersign by
 * design takes the click over HTTP in one process and writes from another (the executor holds
 * the write credential), so it always pays an HTTP hop in, a database hand-off between processes
 * and its own connections. This floor pays exactly those and nothing more: the bench POSTs
 * (unsigned) to a bare node:http process that GETs the target and, in one statement, UPDATEs the
 * plan (approved and claimed at once, the least the work needs) and NOTIFYs; a second bare process
 * LISTENing GETs and PATCHes with If-Match (bench/process-floor-child.ts). Timed like the product:
 * from the POST to the PATCH's arrival at the target. Its rows are `bench_floor.plans`, as the single-process floor's.
 */
import { fork, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import type { Templates } from "./floor.ts";
import { cleanEnv } from "./processes.ts";
import { databaseUrl, epochNow, READ_TOKEN, WRITE_TOKEN, type Stack } from "./stack.ts";

const CHILD = fileURLToPath(new URL("./process-floor-child.ts", import.meta.url));

export interface ProcessFloor {
  /** One plan (a pending `bench_floor.plans` row) from the click's POST to the PATCH's arrival, in ms; resolves once it is applied. */
  apply(planId: string, contact: number): Promise<number>;
  stop(): Promise<void>;
}

export interface IntakeFloor {
  /** One plan request (the product's body), answered 201 once stored. */
  submit(body: string): Promise<void>;
  stop(): Promise<void>;
}

/** The intake process floor, its rows written from `templates` (the product's own, as floor.ts's). */
export async function startIntakeFloor(stack: Stack, adminUrl: string, templates: Templates): Promise<IntakeFloor> {
  const child = fork(CHILD, ["intake", databaseUrl(adminUrl, stack.database), stack.targetUrl, "-", READ_TOKEN, WRITE_TOKEN], {
    execArgv: ["--import", import.meta.resolve("tsx")],
    env: cleanEnv(),
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const stop = () => stopChildren([child]);
  try {
    const url = await new Promise<string>((resolve, reject) => {
      child.once("exit", (code) => reject(new Error(`bench/process-floor-child.ts intake exited (${code}) before it was ready`)));
      child.on("message", (m: { url?: string }) => m.url && resolve(m.url));
    });
    child.send({ templates });
    return {
      async submit(body) {
        const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body });
        const text = await res.text();
        if (res.status !== 201) throw new Error(`intake process floor answered ${res.status}: ${text.slice(0, 300)}`);
        JSON.parse(text); // read as the product's answer is
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

async function stopChildren(children: ChildProcess[]): Promise<void> {
  await Promise.all(
    children
      .filter((c) => c.connected)
      .map((c) => {
        const exited = new Promise((r) => c.once("exit", r));
        c.disconnect();
        return exited;
      }),
  );
}

export async function startProcessFloor(stack: Stack, adminUrl: string): Promise<ProcessFloor> {
  const channel = `bench_floor_${randomBytes(4).toString("hex")}`;
  const dbUrl = databaseUrl(adminUrl, stack.database);
  const children: ChildProcess[] = [];
  const settled = new Map<string, { resolve: () => void; reject: (err: Error) => void }>();
  const start = (role: "decider" | "executor") =>
    new Promise<{ url?: string }>((resolve, reject) => {
      const child = fork(CHILD, [role, dbUrl, stack.targetUrl, channel, READ_TOKEN, WRITE_TOKEN], {
        execArgv: ["--import", import.meta.resolve("tsx")],
        env: cleanEnv(),
        stdio: ["ignore", "inherit", "inherit", "ipc"],
      });
      children.push(child);
      child.once("exit", (code) => reject(new Error(`bench/process-floor-child.ts ${role} exited (${code}) before it was ready`)));
      child.on("message", (m: { url?: string; ready?: boolean; applied?: string; failed?: string; error?: string }) => {
        if (m.url || m.ready) resolve(m);
        if (m.applied) settled.get(m.applied)?.resolve();
        if (m.failed) settled.get(m.failed)?.reject(new Error(`process floor (${role}): ${m.error}`));
      });
    });
  const stop = () => stopChildren(children);
  try {
    const [{ url }] = await Promise.all([start("decider"), start("executor")]);
    return {
      async apply(planId, contact) {
        const done = new Promise<void>((resolve, reject) => settled.set(planId, { resolve, reject }));
        const arrived = stack.nextWrite(`/contacts/${contact}`);
        const started = epochNow();
        const res = await fetch(url!, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ planId, contact }) });
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`process floor: the click was answered ${res.status}`);
        // A failure settles `done` first; the PATCH then never arrives.
        const elapsed = await Promise.race([arrived.then((at) => at - started), done.then(() => undefined)]);
        await done;
        settled.delete(planId);
        return elapsed ?? (await arrived) - started;
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
