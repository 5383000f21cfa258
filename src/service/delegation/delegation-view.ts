import type { DelegationRow } from "../access/delegations-held.ts";

/** A delegation as doors and the CLI show it. */
export interface DelegationView {
  id: string;
  /** Who is away. */
  delegator: string;
  /** Who decides in their place. */
  delegate: string;
  /** The instant it ends by itself: the end of its last day in the delegator's time zone. */
  until: string;
  /** The targets it covers; null for every target. */
  targets: string[] | null;
  /** A Slack user id, or `cli:<name>` for an admin at the command line. */
  createdBy: string;
  createdAt: string;
  /** Set when it was ended early. */
  endedAt: string | null;
  endedBy: string | null;
  /** Whether it is in force at the time it was read. */
  active: boolean;
}

export function delegationView(row: DelegationRow, now: Date): DelegationView {
  return {
    id: row.id,
    delegator: row.delegator,
    delegate: row.delegate,
    until: row.until.toISOString(),
    targets: row.targets ?? null,
    createdBy: row.createdBy,
    createdAt: row.createdAt.toISOString(),
    endedAt: row.endedAt?.toISOString() ?? null,
    endedBy: row.endedBy ?? null,
    active: row.endedAt === null && row.until > now,
  };
}
