import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  applyEdits,
  patchedInBundle,
  postgresBeginPatch,
  postgresReleasePatch,
  postgresRestartPatch,
  postgresWriteTurnPatch,
} from "../../../patches/postgres-restart.mjs";
import { DIST } from "../../../scripts/build.mjs";

// The driver as published (3.4.9), around the two places the patch edits.
const UNPATCHED = [
  "  function nextWrite(fn) {\n    const x = socket.write(chunk, fn)\n    nextWriteTimer !== null && clearImmediate(nextWriteTimer)\n",
  "  function closed(hadError) {\n    clearImmediate(nextWriteTimer)\n    socket.removeListener('data', data)\n",
].join("\n");

/** reserve() of postgres.js 3.4.9 from its release() to the end, as published. */
const UNPATCHED_RESERVE =
  "    c.reserved.release = true\n\n    const sql = Sql(handler)\n    sql.release = () => {\n      c.reserved = null\n      onopen(c)\n    }\n\n    return sql\n\n    function handler(q) {\n      c.queue === full\n        ? queue.push(q)\n        : c.execute(q) || move(c, full)\n    }\n  }\n";

/** begin() of postgres.js 3.4.9, the three places the patch edits, as published. */
const UNPATCHED_BEGIN = [
  "    let savepoints = 0\n      , connection\n      , prepare = null\n",
  "        new Promise((_, reject) => connection.onclose = reject)\n",
  "      function handler(q) {\n        q.catch(e => uncaughtError || (uncaughtError = e))\n        c.queue === full\n          ? queries.push(q)\n          : c.execute(q) || move(c, full)\n      }\n",
].join("");

/** write() of postgres.js 3.4.9, as published. */
const UNPATCHED_WRITE =
  "  function write(x, fn) {\n    chunk = chunk ? Buffer.concat([chunk, x]) : Buffer.from(x)\n    if (fn || chunk.length >= 1024)\n      return nextWrite(fn)\n    nextWriteTimer === null && (nextWriteTimer = setImmediate(nextWrite))\n    return true\n  }\n";

describe("the postgres restart patch", () => {
  it("edits the unpatched driver, and applying it again changes nothing", () => {
    const once = applyEdits(UNPATCHED, postgresRestartPatch.edits);
    expect(once.problems).toBeUndefined();
    expect(once.text).toContain("if (!socket) { // countersign-patch");
    expect(once.text).toContain("chunk = nextWriteTimer = null // countersign-patch");
    expect(applyEdits(once.text!, postgresRestartPatch.edits)).toEqual({ text: once.text });
  });

  it("refuses a driver whose code moved, naming the code it expected", () => {
    const moved = UNPATCHED.replace("const x = socket.write(chunk, fn)", "const written = socket.write(chunk, fn)");
    const result = applyEdits(moved, postgresRestartPatch.edits);
    expect(result.text).toBeUndefined();
    expect(result.problems).toEqual([expect.stringContaining("function nextWrite(fn)")]);
  });

  it("is in the installed driver the tests run against", () => {
    const installed = readFileSync(path.join(import.meta.dirname, "../../../node_modules/postgres/src/connection.js"), "utf8");
    expect(applyEdits(installed, postgresRestartPatch.edits)).toEqual({ text: installed });
    const pool = readFileSync(path.join(import.meta.dirname, "../../../node_modules/postgres/src/index.js"), "utf8");
    expect(pool).toContain("if (c.reserved !== mine) return // countersign-patch");
    expect(applyEdits(pool, postgresReleasePatch.edits)).toEqual({ text: pool });
    expect(pool).toContain("if (lost) return q.reject(lost) // countersign-patch");
    expect(applyEdits(pool, postgresBeginPatch.edits)).toEqual({ text: pool });
  });

  it("begin() whose connection closed fails what it queued and refuses what its callback sends afterwards", () => {
    const once = applyEdits(UNPATCHED_BEGIN, postgresBeginPatch.edits);
    expect(once.problems).toBeUndefined();
    expect(once.text).toContain(", lost = null");
    expect(once.text).toMatch(/connection\.onclose = e => \{[^\n]*\n\s*lost = e\n\s*reject\(e\)\n\s*while \(queries\.length\) queries\.shift\(\)\.reject\(e\)/);
    // The handler refuses before it queues or executes.
    expect(once.text!.indexOf("if (lost) return q.reject(lost)")).toBeLessThan(once.text!.indexOf("c.queue === full"));
    expect(applyEdits(once.text!, postgresBeginPatch.edits)).toEqual({ text: once.text });
  });

  it("release() of a reserved connection that closed leaves it to the pool instead of handing it out again or taking it from its next holder", () => {
    const once = applyEdits(UNPATCHED_RESERVE, postgresReleasePatch.edits);
    expect(once.text).toContain("const mine = c.reserved");
    expect(once.text).toContain("if (c.reserved !== mine) return // ");
    expect(applyEdits(once.text!, postgresReleasePatch.edits)).toEqual({ text: once.text });
  });

  it("a reserved connection that closed fails what its holder queued and sends afterwards, instead of leaving it waiting", () => {
    const once = applyEdits(UNPATCHED_RESERVE, postgresReleasePatch.edits);
    expect(once.text).toContain("c.onclose = (e) => { while (queue.length) queue.shift().reject(e) }");
    expect(once.text).toContain("if (c.reserved !== mine) return q.reject(Errors.connection('CONNECTION_CLOSED', options))");
    // The handler refuses before it queues or executes.
    expect(once.text!.indexOf("return q.reject")).toBeLessThan(once.text!.indexOf("? queue.push(q)"));
  });

  it("a connection flushes once a turn, up to 64 KiB, instead of at 1 KiB", () => {
    const once = applyEdits(UNPATCHED_WRITE, postgresWriteTurnPatch.edits);
    expect(once.problems).toBeUndefined();
    expect(once.text).toContain("if (fn || chunk.length >= 65536) // countersign-patch");
    expect(once.text).not.toContain(">= 1024");
    // The turn's flush is untouched: smaller writes still go at the end of the turn.
    expect(once.text).toContain("nextWriteTimer = setImmediate(nextWrite)");
    expect(applyEdits(once.text!, postgresWriteTurnPatch.edits)).toEqual({ text: once.text });
    const installed = readFileSync(path.join(import.meta.dirname, "../../../node_modules/postgres/src/connection.js"), "utf8");
    expect(applyEdits(installed, postgresWriteTurnPatch.edits)).toEqual({ text: installed });
  });

  it("is in the bundle the package ships (dist/, built by the global setup)", () => {
    const bundle = readdirSync(DIST)
      .filter((f) => f.endsWith(".js"))
      .map((f) => readFileSync(path.join(DIST, f), "utf8"))
      .join("\n");
    expect(bundle).toContain("function nextWrite(fn)");
    for (const { edit, pattern } of patchedInBundle) expect(pattern.test(bundle), edit).toBe(true);
    expect(patchedInBundle.every(({ pattern }) => pattern.test(UNPATCHED))).toBe(false);
  });
});
