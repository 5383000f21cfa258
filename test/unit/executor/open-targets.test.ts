import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { Adapter, AdapterPlanned } from "../../../src/adapters/adapter.ts";
import { AdapterRegistry } from "../../../src/adapters/registry.ts";
import { openTargets } from "../../../src/executor/open-targets.ts";
import { runExecutor } from "../../../src/executor/run-executor.ts";
import type { ExecutorServer } from "../../../src/executor/server-client.ts";
import { silentLogger, testGrantKeys } from "../../support/harness.ts";

/** An adapter of kind `memory` that records which readers and writers were opened and closed. */
function recordingAdapter(log: string[]): Adapter<any, AdapterPlanned, { adapter: string }> {
  return {
    kind: "memory",
    actionSchema: z.any(),
    plannedSchema: z.any(),
    targetSchema: z.any(),
    address: () => ({ op: "set", path: "/" }),
    refusals: () => [],
    classify: () => "permanent",
    describe: () => ({ reaches: "memory", lines: [] }),
    judge: () => ({ state: "ready" }),
    openReader(name) {
      log.push(`open reader ${name}`);
      const fail = async (): Promise<never> => {
        throw new Error("not read in this test");
      };
      return { preview: fail, read: fail, revalidate: fail, verify: fail, close: async () => void log.push(`close reader ${name}`) };
    },
    openWriter(name) {
      log.push(`open writer ${name}`);
      return {
        timeoutMs: 1000,
        apply: async () => ({ status: "failed", errorClass: "permanent", detail: "not written in this test" }),
        close: async () => void log.push(`close writer ${name}`),
      };
    },
  };
}

describe("the executor's targets", () => {
  it("opens a reader and a writer per target once, finds them by name, and closes every one", async () => {
    const log: string[] = [];
    const targets = openTargets(new AdapterRegistry([recordingAdapter(log)]), { a: { adapter: "memory" }, b: { adapter: "memory" } });
    expect(targets.get("a").adapter.kind).toBe("memory");
    expect(targets.get("a")).toBe(targets.get("a"));
    expect(() => targets.get("c")).toThrow("target 'c' is not in the executor's config");
    expect(log).toStrictEqual(["open reader a", "open writer a", "open reader b", "open writer b"]);
    await targets.close();
    expect(log.slice(4).sort()).toStrictEqual(["close reader a", "close reader b", "close writer a", "close writer b"]);
  });

  it("a target whose adapter is not registered is an error at start naming the kind and the known ones; what was opened is closed", async () => {
    const log: string[] = [];
    expect(() => openTargets(new AdapterRegistry([recordingAdapter(log)]), { a: { adapter: "memory" }, b: { adapter: "ftp.file" } })).toThrow(
      "no adapter of kind 'ftp.file'; known kinds: 'memory'",
    );
    await new Promise((r) => setImmediate(r));
    expect(log).toStrictEqual(["open reader a", "open writer a", "close reader a", "close writer a"]);
  });

  it("runExecutor opens the targets at start and closes them when stopped", async () => {
    const log: string[] = [];
    const idle: ExecutorServer = {
      keys: async () => undefined,
      claim: (_kids, signal) =>
        new Promise((resolve) => (signal?.aborted ? resolve(undefined) : signal?.addEventListener("abort", () => resolve(undefined), { once: true }))),
      heartbeat: async () => true,
      report: async () => true,
    };
    const executor = runExecutor({
      server: idle,
      keys: (await testGrantKeys()).verifying,
      environment: "test",
      targets: { a: { adapter: "memory" } },
      registry: new AdapterRegistry([recordingAdapter(log)]),
      logger: silentLogger,
    });
    expect(log).toStrictEqual(["open reader a", "open writer a"]);
    await executor.stop();
    expect(log.slice(2).sort()).toStrictEqual(["close reader a", "close writer a"]);
  });
});
