import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openApiDocument } from "../../../src/server/openapi.ts";

/*
 * Prose says why, in the present tense (STYLE.md, 10): a work-log reference (a session, an
 * internal issue number, a date) means nothing to a reader and belongs in the commit message.
 * An upstream issue is cited by its URL, which these patterns never see.
 */

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const TSC = path.join(ROOT, "node_modules/typescript/bin/tsc");

/** Every page a reader is pointed at; CHANGELOG.md is history by design and stays out. */
const DOC_PATHS = (): string[] => ["README.md", "CONTRIBUTING.md", "SECURITY.md", ...filesUnder("docs", (name) => name.endsWith(".md")), "bench/README.md"];

const HISTORY: RegExp[] = [
  /\bsessions?\s+#?\d+/gi,
  /\bissues?\s+#?\d+/gi,
  /(?<![\w&#])#\d+\b/g,
  /\b(?:19|20)\d\d-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])\b/g,
];
const URL_PATTERN = /\b[a-z][a-z\d+.-]*:\/\/[^\s)>\]"'`]+/gi;

/** The work-log references in a line of prose, URLs left out. */
function historyIn(text: string): string[] {
  const prose = text.replace(URL_PATTERN, (url) => " ".repeat(url.length));
  return HISTORY.flatMap((pattern) => [...prose.matchAll(pattern)].map((m) => m[0]));
}

/** Words after which a `/` starts a regular expression rather than dividing. */
const BEFORE_REGEX = new Set(["return", "typeof", "case", "do", "else", "in", "of", "new", "delete", "void", "throw", "instanceof", "yield", "await"]);

/**
 * Every comment of a TypeScript/JavaScript source, one entry per line with its line number.
 * A small scanner: it steps over strings, templates (with nested `${}`) and regular
 * expressions, so a `//` inside them is no comment. JSX text is read as code; a quote in it
 * opens a string that ends at the line's end, which is as far as the misreading reaches.
 */
function commentLines(source: string): { line: number; text: string }[] {
  const found: { start: number; end: number }[] = [];
  const templates: number[] = [];
  let depth = 0;
  let regexAllowed = true;
  let i = 0;
  const n = source.length;
  /** From just inside a template (or after its `}`) to past its closing backtick, or past a `${`. */
  const template = (from: number): number => {
    let j = from;
    while (j < n) {
      if (source[j] === "\\") j += 2;
      else if (source[j] === "`") return j + 1;
      else if (source[j] === "$" && source[j + 1] === "{") {
        templates.push(depth);
        return j + 2;
      } else j++;
    }
    return n;
  };
  while (i < n) {
    const c = source[i]!;
    const next = source[i + 1];
    if (c === "/" && next === "/") {
      const end = source.indexOf("\n", i);
      found.push({ start: i, end: end < 0 ? n : end });
      i = end < 0 ? n : end;
    } else if (c === "/" && next === "*") {
      const end = source.indexOf("*/", i + 2);
      found.push({ start: i, end: end < 0 ? n : end + 2 });
      i = end < 0 ? n : end + 2;
    } else if (c === "'" || c === '"') {
      let j = i + 1;
      while (j < n && source[j] !== c && source[j] !== "\n") j += source[j] === "\\" ? 2 : 1;
      i = j + 1;
      regexAllowed = false;
    } else if (c === "`") {
      i = template(i + 1);
      regexAllowed = false;
    } else if (c === "/" && regexAllowed) {
      let j = i + 1;
      let inClass = false;
      while (j < n && source[j] !== "\n" && (inClass || source[j] !== "/")) {
        if (source[j] === "\\") j++;
        else if (source[j] === "[") inClass = true;
        else if (source[j] === "]") inClass = false;
        j++;
      }
      i = j + 1;
      while (i < n && /[a-z]/.test(source[i]!)) i++;
      regexAllowed = false;
    } else if (/[\w$]/.test(c)) {
      let j = i;
      while (j < n && /[\w$]/.test(source[j]!)) j++;
      regexAllowed = BEFORE_REGEX.has(source.slice(i, j));
      i = j;
    } else if (/\s/.test(c)) {
      i++;
    } else {
      if (c === "{") depth++;
      if (c === "}" && templates.at(-1) === depth) {
        templates.pop();
        i = template(i + 1);
        regexAllowed = false;
        continue;
      }
      if (c === "}") depth--;
      // After `<` a `/` closes a JSX element; no expression puts a regular expression there.
      regexAllowed = !(c === ")" || c === "]" || c === "}" || c === "<");
      i++;
    }
  }
  const lineStarts = [0, ...[...source.matchAll(/\n/g)].map((m) => m.index + 1)];
  const lineOf = (offset: number) => lineStarts.findLastIndex((start) => start <= offset) + 1;
  return found.flatMap(({ start, end }) =>
    source
      .slice(start, end)
      .split("\n")
      .map((text, k) => ({ line: lineOf(start) + k, text })),
  );
}

/** The prose of a Markdown page by line: fenced code blocks and inline code left out. */
function markdownLines(source: string): { line: number; text: string }[] {
  let fenced = false;
  return source.split("\n").flatMap((text, k) => {
    if (/^\s*(```|~~~)/.test(text)) {
      fenced = !fenced;
      return [];
    }
    return fenced ? [] : [{ line: k + 1, text: text.replace(/`[^`]*`/g, "") }];
  });
}

/**
 * The prose of a shell script by line: its `#` comments (shebang aside), from a `#` that starts
 * the line or follows a blank outside quotes, so `$#` and `${#a[@]}` are code.
 */
function shellCommentLines(source: string): { line: number; text: string }[] {
  return source.split("\n").flatMap((text, k) => {
    if (k === 0 && text.startsWith("#!")) return [];
    let quote = "";
    for (let i = 0; i < text.length; i++) {
      const c = text[i]!;
      if (quote) {
        if (c === "\\" && quote === '"') i++;
        else if (c === quote) quote = "";
      } else if (c === "'" || c === '"') quote = c;
      else if (c === "\\") i++;
      else if (c === "#" && (i === 0 || /\s/.test(text[i - 1]!))) return [{ line: k + 1, text: text.slice(i) }];
    }
    return [];
  });
}

/**
 * The prose of a psql script by line: its `--` comments outside string literals, and its `\echo`
 * labels whole. String literals (seed data, a timestamp in a JSON payload) are data, not prose.
 */
function sqlProseLines(source: string): { line: number; text: string }[] {
  return source.split("\n").flatMap((text, k) => {
    if (/^\s*\\echo\b/.test(text)) return [{ line: k + 1, text }];
    let quoted = false;
    for (let i = 0; i < text.length; i++) {
      if (text[i] === "'") quoted = !quoted;
      else if (!quoted && text.startsWith("--", i)) return [{ line: k + 1, text: text.slice(i) }];
    }
    return [];
  });
}

/** `file:line: text` for each line that carries a work-log reference. */
function offenders(file: string, lines: { line: number; text: string }[]): string[] {
  return lines.flatMap(({ line, text }) => {
    const refs = historyIn(text);
    return refs.length ? [`${file}:${line}: ${refs.join(", ")} in "${text.trim()}"`] : [];
  });
}

function filesUnder(dir: string, keep: (name: string) => boolean): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const rel = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return filesUnder(rel, keep);
    return keep(entry.name) ? [rel] : [];
  });
}

const sourceOffenders = (rel: string, base = ROOT) => offenders(rel, commentLines(readFileSync(path.join(base, rel), "utf8")));

describe("prose carries no work-log history (sessions, issue numbers, dates)", () => {
  it("in the comments of src/", () => {
    const files = filesUnder("src", (name) => /\.tsx?$/.test(name));
    expect(files.length).toBeGreaterThan(100);
    expect(files.flatMap((file) => sourceOffenders(file))).toEqual([]);
  });

  it("in the descriptions, summaries and titles of the served OpenAPI document", () => {
    const found: string[] = [];
    const walk = (node: unknown, at: string[]): void => {
      if (typeof node !== "object" || node === null) return;
      for (const [key, value] of Object.entries(node)) {
        // Example values are sample data (a date in one is fine); their summaries are prose.
        if (key === "example" || (key === "examples" && Array.isArray(value)) || (key === "value" && at.at(-2) === "examples")) continue;
        if (typeof value === "string" && ["description", "summary", "title"].includes(key)) {
          const refs = historyIn(value);
          if (refs.length) found.push(`openapi.json#/${[...at, key].join("/")}: ${refs.join(", ")} in "${value}"`);
        } else walk(value, [...at, key]);
      }
    };
    walk(openApiDocument("https://countersign.test"), []);
    expect(found).toEqual([]);
  });

  describe("in the published client's .d.ts, as the build emits them", () => {
    let built: string;
    beforeAll(async () => {
      built = mkdtempSync(path.join(tmpdir(), "countersign-history-"));
      await promisify(execFile)(process.execPath, [TSC, "-p", path.join(ROOT, "tsconfig.client.json"), "--outDir", built], { cwd: ROOT, timeout: 120_000 });
    }, 180_000);
    afterAll(() => {
      if (built) rmSync(built, { recursive: true, force: true });
    });

    it("has none in its comments", () => {
      const files = readdirSync(built).filter((name) => name.endsWith(".d.ts"));
      expect(files).toContain("wire-types.d.ts");
      expect(files.flatMap((file) => sourceOffenders(file, built).map((o) => `dist/client/${o}`))).toEqual([]);
    });
  });

  it("in the comments of test/", () => {
    const files = filesUnder("test", (name) => /\.[cm]?[jt]sx?$/.test(name));
    expect(files).toContain("test/unit/build/history.test.ts");
    expect(files.length).toBeGreaterThan(200);
    expect(files.flatMap((file) => sourceOffenders(file))).toEqual([]);
  });

  it("in the comments of bench/ and scripts/, their shell scripts' comments and their SQL's comments and labels", () => {
    const sources = [...filesUnder("bench", (name) => /\.[cm]?[jt]sx?$/.test(name)), ...filesUnder("scripts", (name) => /\.[cm]?[jt]sx?$/.test(name))];
    const shell = [...filesUnder("bench", (name) => name.endsWith(".sh")), ...filesUnder("scripts", (name) => name.endsWith(".sh"))];
    const psql = [...filesUnder("bench", (name) => name.endsWith(".sql")), ...filesUnder("scripts", (name) => name.endsWith(".sql"))];
    expect(sources).toEqual(
      expect.arrayContaining(["bench/run.ts", "bench/figures/intake.ts", "bench/socket-trace.mjs", "scripts/layers.mjs", "scripts/build.d.mts"]),
    );
    expect(shell).toEqual(expect.arrayContaining(["bench/load.sh", "bench/scans/compare.sh"]));
    expect(psql).toEqual(expect.arrayContaining(["bench/scans/explain.sql", "bench/scans/seed.sql"]));
    const read = (rel: string) => readFileSync(path.join(ROOT, rel), "utf8");
    expect([
      ...sources.flatMap((file) => sourceOffenders(file)),
      ...shell.flatMap((file) => offenders(file, shellCommentLines(read(file)))),
      ...psql.flatMap((file) => offenders(file, sqlProseLines(read(file)))),
    ]).toEqual([]);
  });

  it("reads shell comments and SQL comments and labels as prose, and their code and string literals as not", () => {
    const shell = ["#!/usr/bin/env bash", "# from issue 16", 'if [[ $# -gt 0 ]]; then echo "# issue 17"; fi  # session 3', "n=${#pids[@]} # fine"].join("\n");
    expect(offenders("x.sh", shellCommentLines(shell))).toEqual(['x.sh:2: issue 16 in "# from issue 16"', 'x.sh:3: session 3 in "# session 3"']);
    const psql = ["-- seeded 2026-01-01", "SELECT '{\"at\":\"2026-01-01T00:00:00Z\"}', 'a--issue 4' -- issue 5", "\\echo '== before issue 13'"].join("\n");
    expect(offenders("x.sql", sqlProseLines(psql))).toEqual([
      'x.sql:1: 2026-01-01 in "-- seeded 2026-01-01"',
      'x.sql:2: issue 5 in "-- issue 5"',
      "x.sql:3: issue 13 in \"\\echo '== before issue 13'\"",
    ]);
  });

  it("in the docs: README, CONTRIBUTING, SECURITY, bench/README and every page under docs/", () => {
    const docs = DOC_PATHS();
    expect(docs.length).toBeGreaterThan(20);
    expect(docs.flatMap((rel) => offenders(rel, markdownLines(readFileSync(path.join(ROOT, rel), "utf8"))))).toEqual([]);
  });
});
