import type { Hold } from "../../contract/agent-api.ts";
import { grantHeaderSegment, unverifiedKidOf } from "../../grant/grant.ts";
import type { Database } from "../../store/db.ts";
import type { ServiceContext } from "../context.ts";

/** How long an executor counts as present after its last claim ended: it asks again at once, and a long-poll lasts 25 s at most. */
export const PRESENT_MS = 60_000;

/** The grant header segments a claim naming `kids` matches; undefined (any grant) when it names none. */
export function grantHeadersOf(kids: readonly string[] | undefined): string[] | undefined {
  return kids === undefined || kids.length === 0 ? undefined : kids.map(grantHeaderSegment);
}

/** The executors that asked this replica for work with one set of key ids. */
interface Sighting {
  /** Undefined when they named none: they are handed any plan. */
  kids: readonly string[] | undefined;
  headers: ReadonlySet<string> | undefined;
  firstAt: number;
  lastAt: number;
  /** Their claim requests waiting now. */
  polling: number;
}

/**
 * Which keys the executors asking this replica for work can verify, for what a plan's view says:
 * an approved plan none of them may be handed is held for a key mismatch. Only this replica's
 * executors are known here; a claim never depends on it (it matches the grant in its statement).
 * Kept per Database, so servers and test files in one process do not share what they saw.
 */
const seenBy = new WeakMap<Database, Map<string, Sighting>>();

/** Marks a claim request from an executor naming `kids` as waiting; call what it returns when it ends. */
export function executorPolling(ctx: Pick<ServiceContext, "database" | "clock" | "logger" | "grantKey">, kids: readonly string[] | undefined): () => void {
  let seen = seenBy.get(ctx.database);
  if (!seen) seenBy.set(ctx.database, (seen = new Map()));
  const key = kids === undefined || kids.length === 0 ? "" : [...kids].sort().join(" ");
  const now = ctx.clock().getTime();
  let sighting = seen.get(key);
  if (!sighting || (sighting.polling === 0 && now - sighting.lastAt > PRESENT_MS)) {
    for (const [k, s] of seen) if (s.polling === 0 && now - s.lastAt > PRESENT_MS) seen.delete(k);
    const headers = grantHeadersOf(kids);
    sighting = { kids: headers ? kids : undefined, headers: headers && new Set(headers), firstAt: now, lastAt: now, polling: 0 };
    seen.set(key, sighting);
    if (sighting.kids && !sighting.kids.includes(ctx.grantKey.kid))
      ctx.logger.warn(
        { executorKids: sighting.kids, grantKid: ctx.grantKey.kid },
        `an executor asks for work that can verify none of the grants this server signs (key \`${ctx.grantKey.kid}\`): its COUNTERSIGN_GRANT_PUBLIC_KEY holds ${sighting.kids.map((k) => `\`${k}\``).join(", ")}; approved plans wait for an executor with the server's public key`,
      );
  }
  const polling = sighting;
  polling.polling++;
  polling.lastAt = now;
  return () => {
    polling.polling--;
    polling.lastAt = Math.max(polling.lastAt, ctx.clock().getTime());
  };
}

/** How many executors' claim requests wait on this replica now: each is a connected executor, whatever the database says yet. */
export function claimsWaitingHere(database: Database): number {
  let waiting = 0;
  for (const s of seenBy.get(database)?.values() ?? []) waiting += s.polling;
  return waiting;
}

/**
 * Why an approved plan waits though executors ask for work: none of those asking this replica
 * now can verify its grant (they would never be handed it). Undefined when one can, or when no
 * executor has asked lately (nothing is known then).
 */
export function grantKeyHold(
  ctx: Pick<ServiceContext, "database" | "clock">,
  plan: { grant: string | null; updatedAt: Date },
): Extract<Hold, { by: "grant_key_mismatch" }> | undefined {
  if (!plan.grant) return undefined;
  const now = ctx.clock().getTime();
  const present = [...(seenBy.get(ctx.database)?.values() ?? [])].filter((s) => s.polling > 0 || now - s.lastAt <= PRESENT_MS);
  if (present.length === 0) return undefined;
  const header = plan.grant.split(".", 1)[0]!;
  if (present.some((s) => !s.headers || s.headers.has(header))) return undefined;
  const grantKid = unverifiedKidOf(plan.grant) ?? "(none)";
  const executorKids = [...new Set(present.flatMap((s) => s.kids ?? []))].sort();
  const since = Math.max(plan.updatedAt.getTime(), Math.min(...present.map((s) => s.firstAt)));
  return {
    by: "grant_key_mismatch",
    reason: `the executors asking for work cannot verify this plan's grant: it is signed with key \`${grantKid}\`, their COUNTERSIGN_GRANT_PUBLIC_KEY holds ${executorKids.map((k) => `\`${k}\``).join(", ")}; it waits for an executor with the server's public key, until its grant expires`,
    since: new Date(since).toISOString(),
    grantKid,
    executorKids,
  };
}
