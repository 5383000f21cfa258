import type { PostgresRowAction, PostgresRowTarget } from "../plan/postgres-row-schema.ts";
import type { Op } from "../plan/schema.ts";

/** What a target lets agents propose. Deny by default: a target without it accepts nothing. */
export interface Allowlist {
  ops: readonly Op[];
  /** Path patterns: `*` matches one segment, `**` any number of segments (including none). */
  paths: readonly string[];
  maxActions?: number | undefined;
  /** Largest action body, in bytes of its JSON. */
  maxBodyBytes?: number | undefined;
}

export interface Refusal {
  /** Which rule refused it, as a config key (e.g. `targets.crm.allow.ops`). */
  rule: string;
  /** JSON Pointer into the request. */
  path: string;
  message: string;
}

/**
 * Whether a plan's actions on one target stay inside what the target allows. Returns every
 * refusal, each naming the rule, so an agent can fix all of them at once.
 */
export function refusalsFor(
  target: string,
  allow: Allowlist | undefined,
  actions: readonly { index: number; op: Op; path: string; body?: unknown }[],
): Refusal[] {
  const key = `targets.${target}.allow`;
  if (!allow) {
    return [
      {
        rule: key,
        path: `/actions/${actions[0]?.index ?? 0}/target`,
        message: `target '${target}' allows no proposals: its config has no 'allow' block (deny by default)`,
      },
    ];
  }
  const refusals: Refusal[] = [];
  if (allow.maxActions !== undefined && actions.length > allow.maxActions) {
    refusals.push({
      rule: `${key}.maxActions`,
      path: "/actions",
      message: `${actions.length} actions on '${target}', but it allows at most ${allow.maxActions} per plan`,
    });
  }
  for (const action of actions) {
    if (!allow.ops.includes(action.op)) {
      refusals.push({
        rule: `${key}.ops`,
        path: `/actions/${action.index}/op`,
        message: `op '${action.op}' is not allowed on '${target}' (allowed: ${allow.ops.join(", ") || "none"})`,
      });
    }
    if (!allow.paths.some((pattern) => pathMatches(pattern, action.path))) {
      refusals.push({
        rule: `${key}.paths`,
        path: `/actions/${action.index}/path`,
        message: `path ${action.path} matches none of ${allow.paths.join(", ") || "(no patterns)"} on '${target}'`,
      });
    }
    if (allow.maxBodyBytes !== undefined && action.body !== undefined) {
      const size = Buffer.byteLength(JSON.stringify(action.body));
      if (size > allow.maxBodyBytes) {
        refusals.push({
          rule: `${key}.maxBodyBytes`,
          path: `/actions/${action.index}/body`,
          message: `body is ${size} bytes, over the ${allow.maxBodyBytes} '${target}' allows`,
        });
      }
    }
  }
  return refusals;
}

/** `*` is one path segment, `**` any number of them; everything else matches literally. */
export function pathMatches(pattern: string, path: string): boolean {
  const want = pattern.split("/").filter(Boolean);
  const got = path.split("/").filter(Boolean);
  const match = (i: number, j: number): boolean => {
    if (i === want.length) return j === got.length;
    if (want[i] === "**") return match(i + 1, j) || (j < got.length && match(i, j + 1));
    if (j === got.length) return false;
    return (want[i] === "*" || want[i] === got[j]) && match(i + 1, j + 1);
  };
  return match(0, 0);
}

/**
 * What `allow` refuses among a plan's actions on one postgres.row target: every op outside
 * `allow.ops` and every table outside `allow.tables`, each naming its config key; without
 * `allow`, everything (deny by default).
 */
export function postgresRowRefusals(
  name: string,
  target: PostgresRowTarget,
  actions: readonly { index: number; action: Pick<PostgresRowAction, "op" | "table"> }[],
): Refusal[] {
  const key = `targets.${name}.allow`;
  const allow = target.allow;
  if (!allow)
    return [
      {
        rule: key,
        path: `/actions/${actions[0]?.index ?? 0}/target`,
        message: `target '${name}' allows no proposals: its config has no 'allow' block (deny by default)`,
      },
    ];
  const refusals: Refusal[] = [];
  for (const { index, action } of actions) {
    if (!allow.ops.includes(action.op))
      refusals.push({
        rule: `${key}.ops`,
        path: `/actions/${index}/op`,
        message: `op '${action.op}' is not allowed on '${name}' (allowed: ${allow.ops.join(", ")})`,
      });
    if (!allow.tables.includes(action.table))
      refusals.push({
        rule: `${key}.tables`,
        path: `/actions/${index}/table`,
        message: `table '${action.table.slice(0, 63)}' is not one agents may change on '${name}' (allowed: ${allow.tables.join(", ")})`,
      });
  }
  return refusals;
}
