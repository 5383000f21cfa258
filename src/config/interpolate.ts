/** `${VAR}` in a config string reads the environment. `$${` escapes a literal `${`. */
const REFERENCE = /\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

export interface InterpolationProblem {
  key: string;
  message: string;
  /** The variable that is not set. */
  variable: string;
}

/** Which keys a role never reads: the walk drops them without looking inside. */
export type Skip = (path: readonly string[]) => boolean;

/**
 * Resolves `${VAR}` references in every string of `raw`, except under keys `skip` says no to:
 * a role resolves only what it uses, so the server never even reads a write credential.
 * Skipped subtrees are dropped from the result, not passed through unresolved.
 */
export function interpolate(
  raw: unknown,
  env: Record<string, string | undefined>,
  skip: Skip = () => false,
): { value: unknown; problems: InterpolationProblem[] } {
  const problems: InterpolationProblem[] = [];
  const value = walk(raw, [], skip, (text, path) =>
    text.replace(REFERENCE, (_match, name: string | undefined) => {
      if (name === undefined) return "${";
      const resolved = env[name];
      if (resolved === undefined || resolved === "") {
        problems.push({ key: path.join("."), message: `uses \${${name}}, which is not set; export ${name} or change the value`, variable: name });
        return "";
      }
      return resolved;
    }),
  );
  return { value, problems };
}

/** `raw` without the keys `skip` says no to, its strings as written: what a role's shape is checked on. */
export function prune(raw: unknown, skip: Skip): unknown {
  return walk(raw, [], skip, (text) => text);
}

/** Whether interpolation may change `raw`: some string in it holds `${` (a reference, or the escape). */
export function mayInterpolate(raw: unknown): boolean {
  if (typeof raw === "string") return raw.includes("${");
  if (typeof raw === "object" && raw !== null) return Object.values(raw).some(mayInterpolate);
  return false;
}

function walk(value: unknown, path: string[], skip: Skip, text: (value: string, path: string[]) => string): unknown {
  if (typeof value === "string") return text(value, path);
  if (Array.isArray(value)) return value.map((v, i) => walk(v, [...path, String(i)], skip, text));
  if (typeof value === "object" && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      if (skip([...path, k])) continue;
      out[k] = walk(v, [...path, k], skip, text);
    }
    return out;
  }
  return value;
}
