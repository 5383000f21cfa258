import type { Database } from "../../store/db.ts";

/** Ids waiting for a refresh per database; a page that sees more than this many unknown people adds the rest on a later view. */
const MAX_WAITING = 1000;
const waiting = new WeakMap<Database, Set<string>>();

/** Asks the background refresh for these people's names; nothing here reaches Slack. */
export function wantNames(database: Database, userIds: Iterable<string>): void {
  let set = waiting.get(database);
  if (!set) waiting.set(database, (set = new Set()));
  for (const id of userIds) {
    if (set.size >= MAX_WAITING) return;
    set.add(id);
  }
}

/** Takes up to `max` waiting ids, oldest first. */
export function takeWanted(database: Database, max: number): string[] {
  const set = waiting.get(database);
  if (!set) return [];
  const taken = [...set].slice(0, max);
  for (const id of taken) set.delete(id);
  return taken;
}
