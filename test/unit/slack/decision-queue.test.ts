import { describe, expect, it } from "vitest";
import { DecisionQueue } from "../../../src/slack/decision-queue.ts";
import { waitFor } from "../../support/wait-for.ts";

/** A task the test finishes by hand, recording when it started. */
function heldTask(log: string[], name: string): { task: () => Promise<void>; finish: () => void; fail: (err: Error) => void } {
  let finish!: () => void;
  let fail!: (err: Error) => void;
  const done = new Promise<void>((resolve, reject) => ((finish = resolve), (fail = reject)));
  return {
    task: async () => {
      log.push(`start ${name}`);
      await done;
      log.push(`end ${name}`);
    },
    finish: () => finish(),
    fail: (err) => fail(err),
  };
}

/** A slotMs no test step reaches, however loaded the machine: only finishing frees a place. */
const HOURS = 3_600_000;

/** Lets queued setImmediate callbacks and the promise reactions they cause run. */
const turns = async (n = 5) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

describe("DecisionQueue", () => {
  it("never runs a task in the turn that queued it", async () => {
    const log: string[] = [];
    const queue = new DecisionQueue(() => undefined);
    queue.push(async () => void log.push("task"));
    await Promise.resolve(); // every microtask of this turn
    await Promise.resolve();
    expect(log).toEqual([]);
    await queue.drain();
    expect(log).toEqual(["task"]);
  });

  it("runs at most `concurrency` tasks at once, in the order they came", async () => {
    const log: string[] = [];
    const queue = new DecisionQueue(() => undefined, 2, HOURS);
    const tasks = ["a", "b", "c", "d"].map((name) => heldTask(log, name));
    for (const t of tasks) queue.push(t.task);
    await turns();
    expect(log).toEqual(["start a", "start b"]);
    expect(queue.size).toBe(4);
    tasks[1]!.finish();
    await turns();
    expect(log).toEqual(["start a", "start b", "end b", "start c"]);
    tasks[0]!.finish();
    tasks[2]!.finish();
    tasks[3]!.finish();
    await queue.drain();
    expect(log.filter((l) => l.startsWith("start"))).toEqual(["start a", "start b", "start c", "start d"]);
    expect(queue.size).toBe(0);
  });

  it("drain waits for running and waiting tasks, including those queued while it waits", async () => {
    const log: string[] = [];
    const queue = new DecisionQueue(() => undefined, 1, HOURS);
    const first = heldTask(log, "first");
    queue.push(first.task);
    let drained = false;
    const draining = queue.drain().then(() => (drained = true));
    await turns();
    queue.push(async () => void log.push("late"));
    first.finish();
    await draining;
    expect(drained).toBe(true);
    expect(log).toEqual(["start first", "end first", "late"]);
    await expect(queue.drain()).resolves.toBeUndefined(); // nothing left: at once
  });

  it("reports a failed task and goes on with the next", async () => {
    const errors: unknown[] = [];
    const log: string[] = [];
    const queue = new DecisionQueue((err) => errors.push(err), 1, HOURS);
    const failing = heldTask(log, "failing");
    queue.push(failing.task);
    queue.push(async () => void log.push("next"));
    await turns();
    failing.fail(new Error("database said no"));
    await queue.drain();
    expect((errors[0] as Error).message).toBe("database said no");
    expect(log).toEqual(["start failing", "next"]);
  });

  it("a task running past slotMs gives its place to the next, and drain still waits for it", async () => {
    const log: string[] = [];
    const queue = new DecisionQueue(() => undefined, 1, 50);
    const stuck = heldTask(log, "stuck");
    queue.push(stuck.task);
    queue.push(async () => void log.push("next"));
    await waitFor("the next task to start while the first is still held", () => log.includes("next"));
    expect(log).toEqual(["start stuck", "next"]);
    expect(queue.size).toBe(1);
    let drained = false;
    const draining = queue.drain().then(() => (drained = true));
    await turns();
    expect(drained).toBe(false);
    stuck.finish();
    await draining;
    expect(log).toEqual(["start stuck", "next", "end stuck"]);
  });

  it("refuses a concurrency that is not a whole number of at least 1, and a slotMs of 0 or less", () => {
    expect(() => new DecisionQueue(() => undefined, 0)).toThrow(/concurrency must be a whole number of at least 1, got 0/);
    expect(() => new DecisionQueue(() => undefined, 1.5)).toThrow(/got 1.5/);
    expect(() => new DecisionQueue(() => undefined, 1, 0)).toThrow(/slotMs must be more than 0, got 0/);
  });
});
