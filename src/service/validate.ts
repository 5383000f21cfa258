import type { z } from "zod";
import { findTooDeep, toPointer } from "../plan/json.ts";
import { LIMITS } from "../plan/schema.ts";
import { findUnstorable } from "../plan/storable.ts";
import { ServiceError, type Issue } from "./errors.ts";

/** Parses untrusted input with a schema, or throws `invalid_request` naming every offending path. */
export function validate<S extends z.ZodType>(schema: S, input: unknown, what: string): z.infer<S> {
  const deep = findTooDeep(input, LIMITS.maxDepth);
  if (deep) {
    throw new ServiceError("invalid_request", `${what} nests deeper than ${LIMITS.maxDepth} levels`, {
      issues: [{ path: toPointer(deep), message: `nesting deeper than ${LIMITS.maxDepth} levels starts here` }],
    });
  }
  // Checked before the schema so that no string that cannot be hashed or stored gets further.
  const unstorable = findUnstorable(input);
  if (unstorable.length > 0) {
    throw new ServiceError("invalid_request", `${what} is not valid: ${unstorable.map((i) => `${i.path || "/"} ${i.message}`).join("; ")}`, {
      issues: unstorable,
    });
  }
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issues: Issue[] = result.error.issues.flatMap((issue) => {
    const path = issue.path as (string | number)[];
    if (issue.code === "unrecognized_keys") {
      return issue.keys.map((key) => ({ path: toPointer([...path, key]), message: `unknown field '${key}'` }));
    }
    return [{ path: toPointer(path), message: issue.message }];
  });
  throw new ServiceError("invalid_request", `${what} is not valid: ${issues.map((i) => `${i.path || "/"} ${i.message}`).join("; ")}`, { issues });
}
