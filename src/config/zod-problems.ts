import type { z } from "zod";

export interface ConfigProblem {
  key: string;
  message: string;
}

/**
 * A zod error as problems named by key. An unknown key that is a near miss of one the schema
 * reads at that place says which (`input` picks a target's adapter, whose keys differ).
 */
export function zodProblems(issues: readonly z.core.$ZodIssue[], schema?: z.ZodType, input?: unknown): ConfigProblem[] {
  return issues.flatMap((issue) => {
    const path = issue.path.map(String);
    if (issue.code === "unrecognized_keys") {
      const known = schema ? objectKeysAt(schema, path, input) : undefined;
      return issue.keys.map((k) => {
        const near = known && nearMiss(k, known);
        return {
          key: [...path, k].join("."),
          message: near ? `unknown key '${k}'; did you mean '${near}'?` : `unknown key '${k}'; see countersign.example.yml for the keys Countersign reads`,
        };
      });
    }
    // A bad record key (a table or target name): its own rule says what is wrong, not "Invalid key in record".
    if (issue.code === "invalid_key") return [{ key: path.join("."), message: issue.issues.map((i) => i.message).join("; ") || issue.message }];
    return [{ key: path.join("."), message: issue.message }];
  });
}

/** The known key closest to `word` (case aside, a swap of two letters one edit), if it is within one or two edits. */
export function nearMiss(word: string, known: readonly string[]): string | undefined {
  const limit = word.length <= 4 ? 1 : 2;
  let best: { key: string; distance: number } | undefined;
  for (const key of known) {
    const distance = editDistance(word.toLowerCase(), key.toLowerCase());
    if (distance <= limit && (!best || distance < best.distance)) best = { key, distance };
  }
  return best?.key;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps. */
function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}

/** The parts of zod's schema definitions this walk reads. */
interface Def {
  type: string;
  innerType?: Walkable;
  in?: Walkable;
  getter?: () => Walkable;
  shape?: Record<string, Walkable>;
  valueType?: Walkable;
  element?: Walkable;
  options?: Walkable[];
  discriminator?: string;
  values?: unknown[];
}
interface Walkable {
  _zod: { def: Def };
}

const WRAPPERS = new Set(["optional", "nullable", "default", "prefault", "readonly", "catch", "nonoptional"]);

/** The keys of the object schema at `path`, or undefined where the walk cannot tell (a union that `input` does not settle). */
function objectKeysAt(schema: z.ZodType, path: readonly string[], input: unknown): string[] | undefined {
  let at: Walkable | undefined = schema as unknown as Walkable;
  let value = input;
  for (const segment of path) {
    at = unwrap(at, value);
    const def: Def | undefined = at?._zod.def;
    at = def?.type === "object" ? def.shape?.[segment] : def?.type === "record" ? def.valueType : def?.type === "array" ? def.element : undefined;
    value = typeof value === "object" && value !== null ? (value as Record<string, unknown>)[segment] : undefined;
  }
  const def = unwrap(at, value)?._zod.def;
  return def?.type === "object" && def.shape ? Object.keys(def.shape) : undefined;
}

function unwrap(schema: Walkable | undefined, value: unknown): Walkable | undefined {
  let at = schema;
  for (let depth = 0; at && depth < 20; depth++) {
    const def: Def = at._zod.def;
    if (WRAPPERS.has(def.type)) at = def.innerType;
    else if (def.type === "pipe") at = def.in;
    else if (def.type === "lazy") at = def.getter?.();
    else if (def.type === "union" && def.discriminator !== undefined) {
      const chosen = typeof value === "object" && value !== null ? (value as Record<string, unknown>)[def.discriminator] : undefined;
      at = def.options?.find((option) => option._zod.def.shape?.[def.discriminator!]?._zod.def.values?.includes(chosen));
    } else return at;
  }
  return at;
}
