import { execFileSync, spawn } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { afterEach, describe, expect, it } from "vitest";
import { batchedDestination, createLogger, LOG_FLUSH_MS } from "../../src/logging/logger.ts";
import { waitFor } from "../support/wait-for.ts";

/**
 * Log lines go out in batches (src/logging/logger.ts): a line waits for the ones after it, but not for
 * long, and never for good. Written to a file here, so what arrived can be read back.
 */
describe("batched log lines", () => {
  const opened: { dir: string; fd: number }[] = [];
  afterEach(() => {
    for (const { dir, fd } of opened.splice(0)) {
      closeSync(fd);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  function logToFile() {
    const dir = mkdtempSync(path.join(os.tmpdir(), "countersign-log-"));
    const file = path.join(dir, "out.log");
    const fd = openSync(file, "a");
    opened.push({ dir, fd });
    const stream = batchedDestination(fd);
    let writes = 0;
    stream.on("write", () => void writes++);
    // Whole lines only: a read may land in the middle of a write.
    const lines = () =>
      readFileSync(file, "utf8")
        .split("\n")
        .slice(0, -1)
        .map((l) => JSON.parse(l) as { i?: number; msg: string });
    return { logger: createLogger("info", stream), lines, writes: () => writes };
  }

  it("writes requests' lines a few milliseconds apart together, not one write each", async () => {
    const { logger, lines, writes } = logToFile();
    // As a server logs one line per request: the previous destination wrote each alone (40 writes).
    for (let i = 0; i < 40; i++) {
      logger.info({ i, method: "POST", path: "/v1/plans", status: 201 }, "request");
      await delay(2);
    }
    const all = await waitFor("all 40 lines in the file", () => lines().length === 40 && lines());
    expect(all.map((l) => l.i)).toEqual([...Array(40).keys()]);
    expect(writes()).toBeLessThanOrEqual(10);
  });

  it("writes a line logged alone soon, with nothing logged after it", async () => {
    const { logger, lines } = logToFile();
    logger.info("alone");
    const started = performance.now();
    await waitFor("the lone line in the file", () => lines().length === 1, 10_000);
    expect(lines()[0]?.msg).toBe("alone");
    // LOG_FLUSH_MS is 100; the bound is generous for a loaded machine, and far below "never".
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it("writes lines logged while a batch is being written, with nothing logged after them", async () => {
    // A FIFO nobody reads yet: the batch's write blocks once the pipe is full, so the flush timer
    // fires while it is under way (sonic-boom's flush() then does nothing) and the short lines
    // logged meanwhile are left below the batch size when the write ends.
    const dir = mkdtempSync(path.join(os.tmpdir(), "countersign-log-"));
    const fifo = path.join(dir, "fifo");
    execFileSync("mkfifo", [fifo]);
    const fd = openSync(fifo, "r+"); // read-write: opening does not wait for a reader
    const out = openSync(path.join(dir, "out.log"), "a");
    opened.push({ dir, fd }, { dir, fd: out });
    const stream = batchedDestination(fd);
    let written = 0;
    stream.on("write", (n: number) => void (written += n));
    const logger = createLogger("info", stream);
    for (let i = 0; i < 400; i++) logger.info({ i, filler: "x".repeat(200) }, "long");
    // sonic-boom writes its queue in pieces of up to 16 KiB: a line near that size takes a piece
    // of its own, so the short lines after it are a last piece well below the batch size.
    logger.info({ i: 400, filler: "x".repeat(16_000) }, "long");
    for (let i = 401; i < 406; i++) logger.info({ i }, "short");
    await waitFor("the pipe to fill", () => written >= 32_768, 10_000);
    await delay(3 * LOG_FLUSH_MS); // the flush timer fires while the write is blocked
    const reader = spawn("cat", [fifo], { stdio: ["ignore", out, "inherit"] });
    try {
      const lines = () =>
        readFileSync(path.join(dir, "out.log"), "utf8")
          .split("\n")
          .slice(0, -1)
          .map((l) => JSON.parse(l) as { i: number });
      const all = await waitFor("all 406 lines through the pipe", () => lines().length === 406 && lines(), 10_000);
      expect(all.at(-1)?.i).toBe(405);
    } finally {
      reader.kill();
    }
  });
});
