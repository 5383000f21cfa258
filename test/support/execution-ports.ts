import { defaultRegistry } from "../../src/adapters/registry.ts";
import type { ExecutionPorts } from "../../src/executor/execute-plan.ts";
import { openTargets } from "../../src/executor/open-targets.ts";
import type { VerifyingKeys } from "../../src/grant/keys.ts";

/**
 * What `runExecutor` hands `executePlan`: these targets opened through the built-in adapters
 * (reader with the read credential, writer with the write one). Close it when done (http.json
 * targets hold nothing open; postgres.row ones hold pools).
 */
export function executionPorts(
  keys: VerifyingKeys,
  targets: Record<string, { adapter: string }>,
  now: () => Date = () => new Date(),
): ExecutionPorts & { close(): Promise<void> } {
  const opened = openTargets(defaultRegistry(), targets);
  return { keys, environment: "test", now, target: opened.get, close: opened.close };
}
