import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCli } from "../support/cli.ts";
import { freePort } from "../support/free-port.ts";
import { waitFor } from "../support/wait-for.ts";

/**
 * docs/getting-started.md's demo, as a newcomer follows it: the blocks the page marks
 * `<!-- demo -->` are `npm start` and the lines `start` prints; each printed line must match the
 * page's (placeholders aside), and is then run. The browser steps (sign in, open the plan,
 * Approve) are the same requests a browser sends for those clicks.
 */

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** Booting the embedded database and the executor child; several times slower at load average 8 on two cores. */
const START_MS = 300_000;
/** From the Approve to `applied`: the executor child may still be starting when the banner is out. */
const APPLIED_MS = 180_000;
const OPEN = new Set(["pending", "approved", "executing"]);

/** The lines of each fenced block a `<!-- demo … -->` comment stands before, in page order. */
function demoBlocks(page: string): string[][] {
  const blocks: string[][] = [];
  const lines = page.split("\n");
  for (let i = 0; i < lines.length; i++) {
    if (!/^<!-- demo\b.*-->$/.test(lines[i]!.trim())) continue;
    const open = lines.findIndex((line, k) => k > i && line.trim() !== "");
    expect(lines[open], `a fenced block after the demo marker on line ${i + 1}`).toMatch(/^```/);
    const close = lines.findIndex((line, k) => k > open && line.startsWith("```"));
    blocks.push(lines.slice(open + 1, close).filter((line) => line.trim() !== "" && !line.startsWith("#")));
  }
  return blocks;
}

/** The words of a shell line: single quotes and plain words, which is all the page's lines use. */
function shellWords(line: string): string[] {
  const words: string[] = [];
  for (const m of line.matchAll(/'([^']*)'|(\S+)/g)) words.push(m[1] ?? m[2]!);
  return words;
}

/** A `curl -s URL [-H 'Name: value']… [-d 'body']` line as the request curl sends. */
function curlRequest(line: string): { url: string; init: RequestInit } {
  const [command, ...args] = shellWords(line);
  expect(command).toBe("curl");
  const headers: Record<string, string> = {};
  let url: string | undefined;
  let body: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "-s") continue;
    if (arg === "-H") {
      const header = args[++i]!;
      headers[header.slice(0, header.indexOf(":")).trim()] = header.slice(header.indexOf(":") + 1).trim();
    } else if (arg === "-d") body = args[++i];
    else if (arg.startsWith("-")) throw new Error(`the test does not know curl's ${arg}: ${line}`);
    else url = arg;
  }
  if (body !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === "content-type"))
    headers["Content-Type"] = "application/x-www-form-urlencoded";
  return { url: url!, init: body === undefined ? { headers } : { method: "POST", headers, body } };
}

async function curl(line: string): Promise<{ status: number; json: Record<string, unknown> }> {
  const { url, init } = curlRequest(line);
  const res = await fetch(url, init);
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

/** The printed line the page's `template` stands for: its placeholders filled, the server on `port`. */
function printedLine(template: string, output: string, port: number): string {
  const pattern = template
    .replaceAll("localhost:3000", `localhost:${port}`)
    .replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
    .replace(/<(key|port|token)>/g, "[A-Za-z0-9_-]+");
  const found = output.split("\n").find((line) => new RegExp(`^${pattern}$`).test(line.trim()));
  expect(found, `start printed no line like the page's\n  ${template}\nin:\n${output}`).toBeDefined();
  return found!.trim();
}

/** A form's action and hidden fields, from a page as served. */
function form(html: string, action: RegExp): { action: string; fields: Record<string, string> } {
  const found = [...html.matchAll(/<form\b[^>]*\baction="([^"]+)"[^>]*>([\s\S]*?)<\/form>/g)].find((m) => action.test(m[1]!));
  expect(found, `a form posting to ${action}`).toBeDefined();
  const fields: Record<string, string> = {};
  for (const input of found![2]!.matchAll(/<input\b[^>]*>/g)) {
    const name = /\bname="([^"]*)"/.exec(input[0])?.[1];
    if (name) fields[name] = (/\bvalue="([^"]*)"/.exec(input[0])?.[1] ?? "").replaceAll("&amp;", "&");
  }
  return { action: found![1]!, fields };
}

/** A click on a form's button: a POST from the page's own origin, with the session's cookie. */
function submit(page: string, action: string, fields: Record<string, string>, cookie?: string): Promise<Response> {
  return fetch(new URL(action, page), {
    method: "POST",
    headers: { origin: new URL(page).origin, "content-type": "application/x-www-form-urlencoded", ...(cookie ? { cookie } : {}) },
    body: new URLSearchParams(fields).toString(),
    redirect: "manual",
  });
}

describe("docs/getting-started.md, the demo", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "countersign-getting-started-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it(
    "npm start, the printed curl proposes, the sign-in link and Approve let the executor apply it, and the demo target holds the new email",
    async () => {
      const [setup, printed, ...rest] = demoBlocks(readFileSync(path.join(ROOT, "docs/getting-started.md"), "utf8"));
      expect(rest, "demo blocks the test does not run").toEqual([]);
      // `npm install` is this checkout's own; `npm start` is the built command users run.
      expect(setup).toEqual(["npm install && npm start"]);
      const pkg = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> };
      expect(pkg.scripts.start).toBe("node dist/cli.js start");

      const port = await freePort();
      const app = await startCli(["start"], { cwd: dir, env: { PORT: String(port) }, ready: /Ctrl-C stops everything/, timeoutMs: START_MS });
      try {
        const output = app.output();
        const [propose, follow, look] = printed!.map((template) => printedLine(template, output, port));
        expect([propose, follow, look].map((l) => curlRequest(l!).url)).toEqual([
          `http://localhost:${port}/v1/plans`,
          `http://localhost:${port}/v1/plans/ID/wait?timeout=30`,
          expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/contacts\/1$/),
        ]);

        const before = await curl(look!);
        expect(before).toMatchObject({ status: 200, json: { email: "ana@old.example" } });

        // 1. Run the proposing curl.
        const proposed = await curl(propose!);
        expect(proposed.status, JSON.stringify(proposed.json)).toBe(201);
        expect(proposed.json).toMatchObject({ status: "pending", hash: expect.stringMatching(/^sha256:/) });
        const planId = proposed.json.id as string;

        // 2. Open the sign-in link and click Sign in; the plan list shows the plan.
        const link = /^\s+(http:\/\/\S+\/login\/\S+)$/m.exec(output)?.[1];
        expect(link, output).toBeDefined();
        const confirm = await fetch(link!);
        expect(confirm.status).toBe(200);
        const signIn = form(await confirm.text(), /^\/login\//);
        const signedIn = await submit(link!, signIn.action, signIn.fields);
        expect(signedIn.status).toBe(303);
        const cookie = signedIn.headers.getSetCookie()[0]!.split(";")[0]!;
        const list = await fetch(new URL(signedIn.headers.get("location")!, link), { headers: { cookie } });
        expect(list.status).toBe(200);
        expect(await list.text()).toContain(`/plans/${planId}`);

        // 3. Open the plan and click Approve.
        const planUrl = new URL(`/plans/${planId}`, link).toString();
        const planPage = await fetch(planUrl, { headers: { cookie } });
        expect(planPage.status).toBe(200);
        const approve = form(await planPage.text(), /\/approve$/);
        expect(approve.fields.hash).toBe(proposed.json.hash);
        const approved = await submit(planUrl, approve.action, approve.fields, cookie);
        expect(approved.status, await approved.text()).toBe(303);

        // 4. The waiting curl (with the plan id), until the plan is final, then the read-only one.
        const done = await waitFor(
          `plan ${planId} to be applied`,
          async () => {
            const answer = await curl(follow!.replace("/ID/", `/${planId}/`));
            return !OPEN.has(answer.json.status as string) && answer;
          },
          APPLIED_MS,
        );
        expect(done.json).toMatchObject({ status: "applied", outcome: { status: "applied" } });
        expect(await curl(look!)).toMatchObject({ status: 200, json: { email: "ana@new.example" } });
      } finally {
        expect(await app.stop()).toBe(0);
      }
    },
    START_MS + APPLIED_MS,
  );
});
