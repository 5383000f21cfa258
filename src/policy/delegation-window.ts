/** How far ahead a delegation may end: long enough for a leave, short enough to be looked at again. */
export const MAX_DELEGATION_DAYS = 90;

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DAY_MS = 24 * 60 * 60 * 1000;

/** When a delegation ends, or why it cannot end then, in words a person can act on. */
export type DelegationEnd = { until: Date; timeZone: string } | { problem: string };

/**
 * A delegation "until" a day lasts to the end of that day where the delegator lives: the
 * next midnight in their time zone (UTC when Slack gives none, or one this runtime does not
 * know). The day may be today, and at most MAX_DELEGATION_DAYS after today, both in that zone.
 */
export function delegationEnd(date: string, timeZone: string | undefined, now: Date): DelegationEnd {
  const zone = knownZone(timeZone) ?? "UTC";
  const day = parseDay(date);
  if (!day) return { problem: `"${date}" is not a date: give the last day as YYYY-MM-DD, e.g. 2026-12-20` };
  const today = dayIn(now, zone);
  const latest = addDays(today, MAX_DELEGATION_DAYS);
  if (day < today) return { problem: `${date} has passed (today is ${today} in ${zone}): a delegation must end today or later` };
  if (day > latest) return { problem: `${date} is more than ${MAX_DELEGATION_DAYS} days ahead: the latest a delegation made today may end is ${latest}` };
  return { until: midnightAfter(day, zone), timeZone: zone };
}

/** The calendar day (YYYY-MM-DD) an instant falls on in a time zone. */
export function dayIn(at: Date, timeZone: string): string {
  const parts = partsIn(at.getTime(), timeZone);
  return `${pad(parts.year, 4)}-${pad(parts.month, 2)}-${pad(parts.day, 2)}`;
}

/** The IANA zone, when this runtime knows it. */
function knownZone(timeZone: string | undefined): string | undefined {
  if (!timeZone) return undefined;
  try {
    new Intl.DateTimeFormat("en-US", { timeZone });
    return timeZone;
  } catch {
    return undefined;
  }
}

/** The day, normalized, when it is a real calendar date (the 30th of February is not). */
function parseDay(date: string): string | undefined {
  const m = DATE.exec(date.trim());
  if (!m) return undefined;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const utc = new Date(Date.UTC(y, mo - 1, d));
  if (utc.getUTCFullYear() !== y || utc.getUTCMonth() !== mo - 1 || utc.getUTCDate() !== d) return undefined;
  return `${m[1]}-${m[2]}-${m[3]}`;
}

function addDays(day: string, days: number): string {
  return new Date(Date.parse(`${day}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10);
}

/**
 * The instant the day after `day` begins in `timeZone`. A zone's offset at that instant is found
 * by converging from UTC (twice covers a change of offset between the guess and the answer).
 */
function midnightAfter(day: string, timeZone: string): Date {
  const wall = Date.parse(`${addDays(day, 1)}T00:00:00Z`);
  let at = wall;
  for (let i = 0; i < 3; i++) at = wall - offsetAt(at, timeZone);
  return new Date(at);
}

/** How far ahead of UTC the zone's wall clock is at this instant, in ms. */
function offsetAt(at: number, timeZone: string): number {
  const p = partsIn(at, timeZone);
  return Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second) - Math.floor(at / 1000) * 1000;
}

function partsIn(at: number, timeZone: string) {
  const format = new Intl.DateTimeFormat("en-US", {
    timeZone,
    hourCycle: "h23",
    year: "numeric",
    month: "numeric",
    day: "numeric",
    hour: "numeric",
    minute: "numeric",
    second: "numeric",
  });
  const parts = Object.fromEntries(format.formatToParts(new Date(at)).map((p) => [p.type, p.value]));
  return {
    year: Number(parts.year),
    month: Number(parts.month),
    day: Number(parts.day),
    hour: Number(parts.hour),
    minute: Number(parts.minute),
    second: Number(parts.second),
  };
}

const pad = (n: number, width: number) => String(n).padStart(width, "0");
