import type { TargetPolicy } from "./effective-policy.ts";

/** How long a plan waits for decisions: the agent's request within the policy's bounds, or why not. */
export function resolveTtl(requested: number | undefined, ttl: TargetPolicy["ttl"]): { seconds: number } | { error: string } {
  if (requested === undefined) return { seconds: ttl.default };
  if (requested > ttl.max) return { error: `ttlSeconds ${requested} exceeds the policy maximum of ${ttl.max} seconds` };
  if (requested < 10) return { error: "ttlSeconds must be at least 10 seconds, or nobody could decide in time" };
  return { seconds: requested };
}
