/** `${VAR}` in a config string reads the environment. `$${` escapes a literal `${`. */
const REFERENCE = /\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

export interface InterpolationProblem {
  key: string;
  message: string;
}

/**
 * Resolves `${VAR}` references in every string of `raw`, except under keys `skip` says no to:
 * a role resolves only what it uses, so the server never even reads a write credential.
 * Skipped subtrees are dropped from the result, not passed through unresolved.
 */
export function interpolate(
  raw: unknown,
  env: Record<string, string | undefined>,
  skip: (path: readonly string[]) => boolean = () => false,
): { value: unknown; problems: InterpolationProblem[] } {
  const problems: InterpolationProblem[] = [];
  const walk = (value: unknown, path: string[]): unknown => {
    if (typeof value === "string") {
      return value.replace(REFERENCE, (match, name: string | undefined) => {
        if (name === undefined) return "${";
        const resolved = env[name];
        if (resolved === undefined || resolved === "") {
          problems.push({ key: path.join("."), message: `uses \${${name}}, which is not set; export ${name} or change the value` });
          return "";
        }
        return resolved;
      });
    }
    if (Array.isArray(value)) return value.map((v, i) => walk(v, [...path, String(i)]));
    if (typeof value === "object" && value !== null) {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) {
        if (skip([...path, k])) continue;
        out[k] = walk(v, [...path, k]);
      }
      return out;
    }
    return value;
  };
  return { value: walk(raw, []), problems };
}
