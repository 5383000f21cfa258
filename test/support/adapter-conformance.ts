import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { AdapterError, type Adapter, type AdapterAction, type AdapterPlanned, type TargetReader, type TargetWriter } from "../../src/adapters/adapter.ts";
import { waitFor } from "./wait-for.ts";

/**
 * What every adapter must prove on a real target of its kind. A fixture gives a
 * target whose read credential cannot write, an action that changes an existing resource, a way
 * to write behind Countersign's back, and a count of the writes the target has taken.
 */
export interface ConformanceFixture<A extends AdapterAction, P extends AdapterPlanned, T> {
  adapter: Adapter<A, P, T>;
  name: string;
  target: T;
  /** Changes an existing resource. */
  action: A;
  /** Puts the resource back as the action expects to find it (runs before each test). */
  reset(): Promise<void>;
  /** Tries to write with the target's read credential; must reject (the proof it cannot write). */
  writeWithReadCredential(): Promise<unknown>;
  /** Someone else changes the resource after the preview. */
  concurrentWrite(): Promise<void>;
  /** The same target where nothing answers (a refused port). */
  unreachable: T;
  /**
   * Makes the target hold the next write before it takes effect (a lock, a held request) until
   * `release`; `arrived` says whether a write is waiting.
   */
  holdWrites(): Promise<{ arrived(): Promise<boolean>; release(): Promise<void> }>;
  /** Writes the target has taken so far, counted by the target itself. */
  writes(): Promise<number>;
}

export function describeAdapterConformance<A extends AdapterAction, P extends AdapterPlanned, T>(
  label: string,
  setup: () => Promise<ConformanceFixture<A, P, T> & { close(): Promise<void> }>,
): void {
  describe(`adapter conformance: ${label}`, () => {
    let f: Awaited<ReturnType<typeof setup>>;
    let reader: TargetReader<A, P>;
    let writer: TargetWriter<P>;
    beforeAll(async () => {
      f = await setup();
      reader = f.adapter.openReader(f.name, f.target);
      writer = f.adapter.openWriter(f.name, f.target);
    });
    afterAll(async () => {
      await reader?.close();
      await writer?.close();
      await f?.close();
    });
    beforeEach(async () => f.reset());

    it("the action and its target config pass the adapter's own schemas", () => {
      expect(f.adapter.actionSchema.safeParse(f.action).success).toBe(true);
      expect(f.adapter.targetSchema.safeParse(f.target).success).toBe(true);
    });

    it("its allow block admits the fixture's action, and without allow nothing is accepted", () => {
      expect(f.adapter.refusals(f.name, f.target, [{ index: 0, action: f.action }])).toEqual([]);
      const denied = f.adapter.refusals(f.name, { ...(f.target as object), allow: undefined } as T, [{ index: 0, action: f.action }]);
      expect(denied).toEqual([expect.objectContaining({ rule: `targets.${f.name}.allow` })]);
    });

    it("previews with a credential that cannot write, and writes nothing", async () => {
      const before = await f.writes();
      await expect(f.writeWithReadCredential()).rejects.toThrow();
      const { planned, preview } = await reader.preview(f.action);
      expect(f.adapter.plannedSchema.parse(planned)).toEqual(planned);
      expect(preview.version).not.toBeNull();
      expect(preview.before).not.toEqual(preview.after);
      expect(preview.changes.length).toBeGreaterThan(0);
      expect(preview.path).toBe(f.adapter.address(f.name, f.target, f.action).path);
      expect(await f.writes()).toBe(before);
    });

    it("a write by someone else after the preview makes revalidation stale and apply write nothing", async () => {
      const { planned, preview } = await reader.preview(f.action);
      await f.concurrentWrite();
      const afterTheirs = await f.writes();
      const check = await reader.revalidate(planned, preview);
      expect(check.state).toBe("stale");
      if (check.state === "stale") {
        expect(check.expected).toBe(preview.version);
        expect(check.now).not.toBe(preview.version);
        expect(check.changedSincePreview.length).toBeGreaterThan(0);
      }
      expect((await writer.apply(planned, "conformance:stale")).status).toBe("stale");
      expect(await f.writes()).toBe(afterTheirs);
    });

    it("applies once; the re-read verifies it, revalidation finds it held, and a retry writes nothing", async () => {
      const { planned, preview } = await reader.preview(f.action);
      expect(await reader.revalidate(planned, preview)).toEqual({ state: "ready" });
      const first = await f.writes();
      expect(await writer.apply(planned, "conformance:once")).toMatchObject({ status: "applied" });
      expect(await f.writes()).toBe(first + 1);
      expect(await reader.verify(planned, preview)).toEqual({ verified: true });
      expect(await reader.revalidate(planned, preview)).toEqual({ state: "held" });
      // The executor does not write a held action; an adapter that is asked anyway must not write twice.
      const retry = await writer.apply(planned, "conformance:once");
      expect(["applied", "stale"]).toContain(retry.status);
      if (retry.status === "applied") expect(retry.reconciled).toBe(true);
      expect(await f.writes()).toBe(first + 1);
    });

    it("exactly once when the executor is killed mid-apply and a new one retries as the executor does", async () => {
      const { planned, preview } = await reader.preview(f.action);
      const first = await f.writes();
      const hold = await f.holdWrites();
      const child = spawn(process.execPath, ["--import", "tsx", fileURLToPath(new URL("./apply-in-child.ts", import.meta.url))], {
        stdio: ["pipe", "pipe", "inherit"],
      });
      const exited = new Promise((resolve) => child.once("exit", resolve));
      try {
        child.stdin.end(JSON.stringify({ name: f.name, target: f.target, planned }));
        await waitFor("the child's write to reach the target", () => hold.arrived());
        child.kill("SIGKILL");
        await exited;
      } finally {
        await hold.release();
      }
      // What the dead write did is settled by the target, not by the dead process: retry as the executor does.
      const check = await reader.revalidate(planned, preview);
      expect(["held", "ready"]).toContain(check.state);
      if (check.state === "ready") expect(await writer.apply(planned, "crash-test:0")).toMatchObject({ status: "applied" });
      expect(await reader.verify(planned, preview)).toEqual({ verified: true });
      expect(await f.writes()).toBe(first + 1);
    }, 120_000);

    it("a target that does not answer is a transient error, named by the target", async () => {
      const down = f.adapter.openReader(f.name, f.unreachable);
      try {
        const error = await down.preview(f.action).then(
          () => undefined,
          (err: unknown) => err,
        );
        expect(error).toBeInstanceOf(AdapterError);
        expect((error as AdapterError).message).toContain(f.name);
        expect(f.adapter.classify(error)).toBe("transient");
      } finally {
        await down.close();
      }
    });
  });
}
