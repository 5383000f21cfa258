import { describe, expect, it } from "vitest";
import { every, outageAwareReport } from "../../../src/util/every.ts";
import { waitFor } from "../../support/wait-for.ts";

const outage = Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
const isOutage = (err: unknown) => (err as { code?: string }).code === "ECONNREFUSED";

function recordingLog() {
  const lines: { level: string; msg: string }[] = [];
  const at = (level: string) => (_: object, msg: string) => void lines.push({ level, msg });
  return { lines, log: { error: at("error"), warn: at("warn"), info: at("info") } };
}

describe("outageAwareReport", () => {
  it("says one line when an outage starts and one when the loop works again, however many ticks fail", () => {
    const { lines, log } = recordingLog();
    const report = outageAwareReport("outbox delivery", isOutage, log);
    for (let i = 0; i < 40; i++) report.failed(outage);
    report.succeeded!();
    report.succeeded!();
    for (let i = 0; i < 5; i++) report.failed(outage);
    report.succeeded!();
    expect(lines).toEqual([
      { level: "warn", msg: "outbox delivery paused: the database is unreachable; retrying until it returns" },
      { level: "info", msg: "outbox delivery resumed: the database is back" },
      { level: "warn", msg: "outbox delivery paused: the database is unreachable; retrying until it returns" },
      { level: "info", msg: "outbox delivery resumed: the database is back" },
    ]);
  });

  it("a failure of work begun before the recovery does not open a second outage; one begun after does", () => {
    const { lines, log } = recordingLog();
    const report = outageAwareReport("outbox delivery", isOutage, log);
    const begunBefore = Date.now() - 1_000;
    report.failed(outage, begunBefore);
    report.succeeded!();
    // A lane drain stuck on the dead connection since before the database came back fails late.
    report.failed(outage, begunBefore);
    expect(lines.map((l) => l.level)).toEqual(["warn", "info"]);
    report.failed(outage, Date.now() + 1);
    report.failed(outage);
    expect(lines.map((l) => l.level)).toEqual(["warn", "info", "warn"]);
  });

  it("reports every other failure: it is not expected to cure itself", () => {
    const { lines, log } = recordingLog();
    const report = outageAwareReport("expiry sweep", isOutage, log);
    report.failed(new Error("bug"));
    report.failed(new Error("bug"));
    expect(lines.map((l) => l.level)).toEqual(["error", "error"]);
  });
});

describe("every", () => {
  it("keeps running through failures and tells the report of each failure and success", async () => {
    const outcomes: string[] = [];
    let runs = 0;
    const loop = every(
      5,
      async () => {
        runs++;
        if (runs <= 3) throw outage;
      },
      { failed: () => void outcomes.push("failed"), succeeded: () => void outcomes.push("ok") },
    );
    await waitFor("five runs", () => runs >= 5, 10_000);
    await loop.stop();
    expect(outcomes.slice(0, 5)).toEqual(["failed", "failed", "failed", "ok", "ok"]);
  });
});
