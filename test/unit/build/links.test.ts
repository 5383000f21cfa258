import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

/*
 * The docs link to each other and to the tree by relative paths; a page moved, renamed or
 * deleted (or a heading reworded) must fail here rather than leave a reader at a 404.
 */

const ROOT = path.resolve(import.meta.dirname, "../../..");

/** The pages held to the rule: the root docs and every page under docs/. */
function pages(): string[] {
  const root = ["README.md", "CONTRIBUTING.md", "SECURITY.md", "CHANGELOG.md"].filter((file) => existsSync(path.join(ROOT, file)));
  const under = (dir: string): string[] =>
    readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
      const rel = `${dir}/${entry.name}`;
      if (entry.isDirectory()) return under(rel);
      return entry.name.endsWith(".md") ? [rel] : [];
    });
  return [...root, ...under("docs")];
}

/** The lines of a Markdown page outside fenced code blocks, with their 1-based numbers. */
function proseLines(source: string): { line: number; text: string }[] {
  let fence: string | undefined;
  return source.split("\n").flatMap((text, k) => {
    const opening = /^\s*(`{3,}|~{3,})/.exec(text);
    if (opening) {
      if (fence === undefined) fence = opening[1]![0]!;
      else if (opening[1]![0] === fence) fence = undefined;
      return [];
    }
    return fence === undefined ? [{ line: k + 1, text }] : [];
  });
}

/** Link and image targets on a line: `[text](target "title")`, `<target>` forms, and `[label]: target` definitions. */
function targetsOn(text: string): string[] {
  const prose = text.replace(/`[^`]*`/g, "");
  const inline = [...prose.matchAll(/!?\[(?:[^\]\\]|\\.)*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)/g)].map((m) => m[1]!);
  const definition = /^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)/.exec(prose);
  return [...inline, ...(definition ? [definition[1]!] : [])].map((target) => target.replace(/^<(.*)>$/, "$1"));
}

/** GitHub's anchor for a heading: its text as rendered, lower-cased, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  const rendered = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/<[^>]+>/g, "")
    .replace(/`/g, "");
  return rendered
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
    .replace(/ /g, "-");
}

/** Every anchor a page offers: its ATX headings' slugs (repeats numbered as GitHub numbers them) and explicit ids. */
function anchorsOf(file: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const { text } of proseLines(readFileSync(file, "utf8"))) {
    const heading = /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(text);
    if (heading) {
      const base = slug(heading[1]!);
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      anchors.add(n === 0 ? base : `${base}-${n}`);
    }
    for (const id of text.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) anchors.add(id[1]!);
  }
  return anchors;
}

interface Link {
  page: string;
  line: number;
  target: string;
  /** The file or folder it points at, from the repository root; undefined for links leaving the repository. */
  resolved: string | undefined;
  anchor: string | undefined;
}

function linksOf(page: string): Link[] {
  return proseLines(readFileSync(path.join(ROOT, page), "utf8")).flatMap(({ line, text }) =>
    targetsOn(text).flatMap((target): Link[] => {
      if (/^[a-z][a-z\d+.-]*:/i.test(target) || target.startsWith("//")) return [{ page, line, target, resolved: undefined, anchor: undefined }];
      const hash = target.indexOf("#");
      const pathPart = decodeURI(hash < 0 ? target : target.slice(0, hash));
      const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
      const resolved =
        pathPart === ""
          ? page
          : path.relative(ROOT, pathPart.startsWith("/") ? path.join(ROOT, pathPart) : path.resolve(path.dirname(path.join(ROOT, page)), pathPart));
      return [{ page, line, target, resolved: resolved.split(path.sep).join("/"), anchor }];
    }),
  );
}

/** Why a relative link does not resolve, or undefined when it does. */
function brokenBecause(link: Link): string | undefined {
  if (link.resolved === undefined) return undefined;
  if (link.resolved.startsWith("..")) return "points outside the repository";
  const file = path.join(ROOT, link.resolved);
  if (!existsSync(file)) return "no such file";
  if (link.anchor === undefined || link.anchor === "") return undefined;
  if (statSync(file).isDirectory()) return "an anchor on a folder";
  if (!file.endsWith(".md")) return /^L\d+(-L\d+)?$/.test(link.anchor) ? undefined : "an anchor on a file that is not Markdown";
  return anchorsOf(file).has(link.anchor) ? undefined : `no heading with the anchor #${link.anchor}`;
}

describe("the docs' relative links", () => {
  const all = pages();

  it("are read from the root docs and every page under docs/", () => {
    expect(all).toEqual(expect.arrayContaining(["README.md", "CONTRIBUTING.md", "docs/getting-started.md"]));
  });

  it("each resolve to an existing file, and each anchor to a heading there", () => {
    const broken = all.flatMap((page) =>
      linksOf(page).flatMap((link) => {
        const why = brokenBecause(link);
        return why ? [`${link.page}:${link.line}: (${link.target}) ${why}`] : [];
      }),
    );
    expect(broken).toEqual([]);
  });

  it("lead a newcomer from the README to getting started, Slack setup and deployment", () => {
    const route = ["README.md", "docs/getting-started.md", "docs/slack-setup.md", "docs/deploy.md"];
    const missing = route.slice(1).flatMap((next, i) => {
      const from = route[i]!;
      const reaches = existsSync(path.join(ROOT, from)) && linksOf(from).some((link) => link.resolved === next && brokenBecause(link) === undefined);
      return reaches ? [] : [`${from} has no working link to ${next}`];
    });
    expect(missing).toEqual([]);
  });
});

describe("slug", () => {
  it.each([
    ["Run it", "run-it"],
    ["`postgres.row` (`src/adapters/postgres-row/`)", "postgresrow-srcadapterspostgres-row"],
    ["0001 — PGlite as the embedded default", "0001--pglite-as-the-embedded-default"],
    ["Errors, retries and the grant", "errors-retries-and-the-grant"],
    ["See [the design](design.md)", "see-the-design"],
  ])("of %j is %j, as GitHub makes it", (heading, expected) => {
    expect(slug(heading)).toBe(expected);
  });
});
