import { describe, expect, it } from "vitest";
import { dayIn, delegationEnd, MAX_DELEGATION_DAYS } from "../../../src/policy/delegation-window.ts";

const NOW = new Date("2026-12-02T12:00:00.000Z");

describe("delegationEnd: the end of the last day, where the delegator lives", () => {
  it.each<[zone: string | undefined, date: string, until: string]>([
    ["America/New_York", "2026-12-20", "2026-12-21T05:00:00.000Z"],
    ["Asia/Kolkata", "2026-12-20", "2026-12-20T18:30:00.000Z"],
    ["Europe/Lisbon", "2026-12-20", "2026-12-21T00:00:00.000Z"],
    [undefined, "2026-12-20", "2026-12-21T00:00:00.000Z"],
    ["Not/AZone", "2026-12-20", "2026-12-21T00:00:00.000Z"],
    ["America/New_York", "2027-02-28", "2027-03-01T05:00:00.000Z"],
    ["UTC", "2026-12-02", "2026-12-03T00:00:00.000Z"],
  ])("%s, %s → %s", (zone, date, until) => {
    const end = delegationEnd(date, zone, NOW);
    expect("until" in end && end.until.toISOString()).toBe(until);
  });

  it("names the zone it used: UTC when Slack gives none or an unknown one", () => {
    expect(delegationEnd("2026-12-20", undefined, NOW)).toMatchObject({ timeZone: "UTC" });
    expect(delegationEnd("2026-12-20", "Not/AZone", NOW)).toMatchObject({ timeZone: "UTC" });
    expect(delegationEnd("2026-12-20", "Asia/Tokyo", NOW)).toMatchObject({ timeZone: "Asia/Tokyo" });
  });

  it("today counts as today where the delegator is: in Tokyo it is already the 3rd", () => {
    const late = new Date("2026-12-02T23:30:00.000Z");
    expect(dayIn(late, "Asia/Tokyo")).toBe("2026-12-03");
    expect(delegationEnd("2026-12-02", "Asia/Tokyo", late)).toMatchObject({
      problem: expect.stringContaining("2026-12-02 has passed (today is 2026-12-03 in Asia/Tokyo)"),
    });
    expect(delegationEnd("2026-12-02", "America/Los_Angeles", late)).toMatchObject({ until: new Date("2026-12-03T08:00:00.000Z") });
  });

  it.each<[date: string, says: string]>([
    ["2026-12-01", "2026-12-01 has passed (today is 2026-12-02 in UTC): a delegation must end today or later"],
    ["2027-03-03", `2027-03-03 is more than ${MAX_DELEGATION_DAYS} days ahead: the latest a delegation made today may end is 2027-03-02`],
    ["2026-02-30", '"2026-02-30" is not a date: give the last day as YYYY-MM-DD, e.g. 2026-12-20'],
    ["20/12/2026", '"20/12/2026" is not a date: give the last day as YYYY-MM-DD, e.g. 2026-12-20'],
    ["", '"" is not a date: give the last day as YYYY-MM-DD, e.g. 2026-12-20'],
  ])("refuses %j: %s", (date, says) => {
    expect(delegationEnd(date, "UTC", NOW)).toEqual({ problem: says });
  });

  it("across a change of offset: the day after the clocks go forward ends an hour earlier in UTC", () => {
    const spring = new Date("2027-03-10T12:00:00.000Z");
    expect(delegationEnd("2027-03-13", "America/New_York", spring)).toMatchObject({ until: new Date("2027-03-14T05:00:00.000Z") });
    expect(delegationEnd("2027-03-14", "America/New_York", spring)).toMatchObject({ until: new Date("2027-03-15T04:00:00.000Z") });
  });

  it("the 90th day ahead is the last allowed", () => {
    expect(delegationEnd("2027-03-02", "UTC", NOW)).toMatchObject({ until: new Date("2027-03-03T00:00:00.000Z") });
  });
});
