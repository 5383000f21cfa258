import { describe, expect, it } from "vitest";
import { isDatabaseUnreachable } from "../../../src/store/database-errors.ts";

const withCode = (code: string, message = code) => Object.assign(new Error(message), { code });

describe("isDatabaseUnreachable", () => {
  it.each(["ECONNREFUSED", "ECONNRESET", "57P01", "57P03", "08006", "CONNECTION_CLOSED", "CONNECTION_ENDED", "CONNECT_TIMEOUT"])(
    "%s means the database cannot be reached",
    (code) => {
      expect(isDatabaseUnreachable(withCode(code))).toBe(true);
    },
  );

  it("looks through drizzle's wrapper (cause) and Node's per-address AggregateError", () => {
    expect(isDatabaseUnreachable(Object.assign(new Error("Failed query: select 1"), { cause: withCode("57P01") }))).toBe(true);
    expect(isDatabaseUnreachable(Object.assign(new AggregateError([withCode("ECONNREFUSED"), withCode("ECONNREFUSED")]), { code: undefined }))).toBe(true);
  });

  it.each([
    ["a constraint violation", withCode("23505")],
    ["a syntax error", withCode("42601")],
    ["a refusal of the service", Object.assign(new Error("expired"), { code: "plan_expired" })],
    ["an error without a code", new Error("boom")],
    ["a non-error", "ECONNREFUSED"],
    ["nothing", undefined],
  ])("%s is not an outage", (_, err) => {
    expect(isDatabaseUnreachable(err)).toBe(false);
  });

  it("a mixed AggregateError is not an outage: one address answered with a real error", () => {
    expect(isDatabaseUnreachable(new AggregateError([withCode("ECONNREFUSED"), withCode("28P01")]))).toBe(false);
  });
});
