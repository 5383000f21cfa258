import { DrizzleQueryError } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/logging/logger.ts";
import { loggableError, printableError, scrubText } from "../../src/logging/log-redaction.ts";
import { MASK } from "../../src/policy/redact.ts";
import { boltLogger } from "../../src/slack/bolt-logger.ts";

const SECRET = "hunter2-correct-horse";

function captured(): { lines: string[]; logger: ReturnType<typeof createLogger> } {
  const lines: string[] = [];
  return { lines, logger: createLogger("debug", { write: (line: string) => void lines.push(line) }) };
}

describe("what an error may say in a log line", () => {
  it("keeps drizzle's SQL and the database's code, drops the parameters and the quoted row", () => {
    const database = Object.assign(new Error(`invalid input syntax for type uuid: "${SECRET}"`), {
      code: "22P02",
      severity: "ERROR",
      detail: `Failing row contains (${SECRET}).`,
      where: SECRET,
    });
    const err = new DrizzleQueryError('insert into "plans" ("document") values ($1)', [JSON.stringify({ password: SECRET })], database);
    const { lines, logger } = captured();
    logger.error({ err }, "request failed");
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain(SECRET);
    const logged = JSON.parse(lines[0]!).err;
    expect(logged).toMatchObject({
      type: "DrizzleQueryError",
      message: 'Failed query: insert into "plans" ("document") values ($1)',
      cause: { code: "22P02", message: 'invalid input syntax for type uuid: "[redacted]"' },
    });
    expect(logged.stack).toMatch(/^DrizzleQueryError: Failed query: insert/);
  });

  it("drops value-holding fields and secret-named fields of any error, and follows causes", () => {
    const inner = Object.assign(new Error("socket hang up"), { code: "ECONNRESET", config: { headers: { Authorization: `Bearer ${SECRET}` } }, token: SECRET });
    const outer = new Error("Slack call failed", { cause: inner });
    const logged = JSON.stringify(loggableError(outer));
    expect(logged).not.toContain(SECRET);
    expect(logged).toContain("ECONNRESET");
    expect(logged).toContain("socket hang up");
  });

  it.each([
    [`https://admin:${SECRET}@db.example/x`, "https://[redacted]@db.example/x"],
    [`Authorization: Bearer ${SECRET}`, "Authorization: Bearer [redacted]"],
    [`bot xoxb-1234-${SECRET}`, `bot ${MASK}`],
    [`key sk-proj-${SECRET}`, `key ${MASK}`],
  ])("scrubs %s", (text, expected) => {
    expect(scrubText(text, false)).toBe(expected);
  });

  it("leaves an ordinary log object alone but redacts credential-named fields", () => {
    const { lines, logger } = captured();
    logger.info({ planId: "p1", headers: { authorization: `Bearer ${SECRET}` }, password: SECRET }, "hello");
    expect(JSON.parse(lines[0]!)).toMatchObject({ planId: "p1", headers: { authorization: "[redacted]" }, password: "[redacted]", msg: "hello" });
  });

  it("Bolt's own log calls (a listener's error included) pass the same serializer, at Bolt's level", () => {
    const { lines, logger } = captured();
    const bolt = boltLogger(logger);
    bolt.error("An unhandled error occurred while Bolt processed an event", new DrizzleQueryError("select $1", [SECRET], new Error("boom")));
    bolt.info(`ignored below warn ${SECRET}`);
    bolt.warn(`token xoxb-1234-${SECRET}`);
    expect(lines).toHaveLength(2);
    expect(lines.join("")).not.toContain(SECRET);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      component: "bolt",
      msg: "An unhandled error occurred while Bolt processed an event",
      err: { message: "Failed query: select $1" },
    });
  });

  it("the CLI's last words on a fatal error keep the stack and causes, not the parameters", () => {
    const text = printableError(
      new DrizzleQueryError("update plans set x = $1", [SECRET], Object.assign(new Error("deadlock detected"), { code: "40P01", severity: "ERROR" })),
    );
    expect(text).not.toContain(SECRET);
    expect(text).toMatch(/^DrizzleQueryError: Failed query: update plans set x = \$1\n\s+at /);
    expect(text).toMatch(/caused by: Error: deadlock detected/);
  });

  it("a sign-in link's token is not logged with the request path", () => {
    const { lines, logger } = captured();
    logger.error({ err: new Error("boom"), method: "POST", path: `/login/${SECRET}` }, "request failed");
    expect(JSON.parse(lines[0]!)).toMatchObject({ path: "/login/[redacted]" });
  });
});
