import type { PlanDocument } from "./schema.ts";

/**
 * The people a plan asks on behalf of: the person the agent acts for (`onBehalfOf`), the reviewer
 * whose edit made this version (`editedBy`) and the person who asked for an undo (`askedBy`).
 * None of them may approve it: one set, so every door and the decision itself refuse the same
 * people.
 */
export function requestersOf(document: Pick<PlanDocument, "onBehalfOf" | "editedBy" | "askedBy">): string[] {
  const people = [document.onBehalfOf, document.editedBy?.userId, document.askedBy?.userId].filter((p): p is string => p !== undefined);
  return [...new Set(people)];
}
