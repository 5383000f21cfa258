import { mkdirSync } from "node:fs";
import { sql } from "drizzle-orm";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runExecutor } from "../../src/executor/run-executor.ts";
import { executorServer } from "../../src/executor/server-client.ts";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import type { AgentIdentity } from "../../src/service/agents/authenticate-agent.ts";
import { decide } from "../../src/service/decide/decide.ts";
import { submitPlan } from "../../src/service/intake/submit-plan.ts";
import type { PlanView } from "../../src/service/lifecycle/plan-view.ts";
import { createLoginLink } from "../../src/service/sign-in/login-links.ts";
import { chromiumAvailable, launchChromium } from "../support/chromium.ts";
import { pglite } from "../support/databases.ts";
import { freePort } from "../support/free-port.ts";
import { silentLogger, targetConfig, testConfig, testGrantKeys, WRITE_TOKEN } from "../support/harness.ts";
import { SlackEmulator } from "../support/slack-emulator.ts";
import { useServer } from "../support/use-harness.ts";
import { waitFor } from "../support/wait-for.ts";

const EXECUTOR_TOKEN = "executor-token-phone-0123456789ab";
const VIEWPORTS = { desktop: { width: 1280, height: 900 }, phone: { width: 390, height: 844 } } as const;
/** Where the screenshots go, to be looked at. */
const SHOTS = "/tmp/shots";
const FORTY = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`field${String(i + 1).padStart(2, "0")}`, `value ${i + 1} of the forty`]));

const merge = (id: number, body: Record<string, string>) => ({ kind: "http.json", target: "crm", path: `/contacts/${id}`, op: "merge", body });

/**
 * The decision within reach on a phone, in Chromium against the whole server with Slack (names
 * from the emulator's users.info): a 2-field and a 40-field plan at 1280×900 and 390×844. Approve
 * is on the first screen and stays there while the diff scrolls above it, nothing is wider than
 * the window, the header is one row, list rows are labelled, outcome rows count from 1.
 */
describe.skipIf(!chromiumAvailable)("reviewing on a phone and a desktop in Chromium", () => {
  let slack: SlackEmulator;
  let origin: string;
  const s = useServer(pglite, {
    seed: {
      "/contacts/1": { id: 1, name: "Ana Lima", email: "ana@old.example", tier: "silver" },
      "/contacts/2": { id: 2, name: "Bruno Costa", email: "bruno@old.example", tier: "silver" },
      "/contacts/3": { id: 3, name: "Carla Dias", email: "carla@old.example" },
      "/contacts/4": { id: 4, name: "Duarte Reis", email: "duarte@old.example" },
    },
    config: async (targetUrl) => {
      slack = new SlackEmulator({
        users: {
          U0ALICE: { name: "Alice Reviewer" },
          U0BOB: { name: "Sam" },
          U0CAROL: { name: "Sam" },
          U0REQUESTER: { name: "Rita Requester" },
        },
      });
      await slack.start();
      const port = await freePort();
      origin = `http://127.0.0.1:${port}`;
      return {
        ...testConfig({ crm: targetConfig(targetUrl) }),
        port,
        publicUrl: origin,
        executorToken: EXECUTOR_TOKEN,
        slack: {
          ...testConfig({}).slack,
          enabled: true as const,
          botToken: slack.botToken,
          signingSecret: "slack-signing-secret-for-tests",
          appToken: undefined,
          apiUrl: slack.url,
          reviewChannel: "C0REVIEW",
        },
      };
    },
    run: { hostname: "127.0.0.1", sweepMs: 3_600_000, namesMs: 100 },
  });
  let browser: Browser;
  let agent: AgentIdentity;
  const plans: Record<"two" | "forty" | "applied", PlanView> = {} as never;
  const requests: Record<"two" | "forty", unknown[]> = {
    two: [merge(1, { email: "ana@new.example", tier: "gold" })],
    forty: [merge(3, FORTY)],
  };

  const propose = async (title: string, actions: unknown[]) =>
    (await submitPlan(s.server.ctx, { agent, request: { title, reason: "Customer asked by phone, ticket 4411", onBehalfOf: "U0REQUESTER", actions } })).plan;

  const signedIn = async (userId: string, viewport: { width: number; height: number }): Promise<Page> => {
    const page = await (await browser.newContext({ viewport })).newPage();
    const { url } = await createLoginLink(s.server.ctx, { userId, via: "cli" });
    await page.goto(url);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(`${origin}/plans`);
    return page;
  };
  const widths = (page: Page) => page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]") as Promise<[number, number]>;
  const shoot = async (page: Page, name: string) => {
    await page.screenshot({ path: `${SHOTS}/${name}.png` });
    await page.screenshot({ path: `${SHOTS}/${name}-full.png`, fullPage: true });
  };

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    agent = await addAgent(s.server.ctx, { name: "demo-agent" });
    plans.two = await propose("Move Ana to the gold tier", requests.two);
    plans.forty = await propose("Fill in Carla's forty profile fields", requests.forty);
    plans.applied = await propose("Move Bruno to gold, and Duarte's email", [merge(2, { tier: "gold" }), merge(4, { email: "duarte@new.example" })]);
    await decide(s.server.ctx, { planId: plans.applied.id, hash: plans.applied.hash, actor: { userId: "U0BOB", via: "web" }, verdict: "approve" });
    const executor = runExecutor({
      server: executorServer(s.server.url, EXECUTOR_TOKEN),
      keys: (await testGrantKeys()).verifying,
      environment: "test",
      targets: { crm: targetConfig(s.target.url, { write: { headers: { Authorization: `Bearer ${WRITE_TOKEN}` } } }) },
      logger: silentLogger,
    });
    try {
      await waitFor("the executor to apply the plan", async () => {
        const [row] = await s.database.rows<{ status: string }>(sql`SELECT status FROM plans WHERE id = ${plans.applied.id}`);
        return row?.status === "applied";
      });
    } finally {
      await executor.stop();
    }
    browser = await launchChromium();
    // Pages ask for names; the server's background refresh fetches them from the emulator.
    const first = await signedIn("U0ALICE", VIEWPORTS.desktop);
    for (const plan of Object.values(plans)) await first.goto(`${origin}/plans/${plan.id}`);
    await waitFor("the names of the people on the pages", async () => {
      const named = await s.database.rows<{ user_id: string }>(sql`SELECT user_id FROM people WHERE display_name IS NOT NULL`);
      return named.length === 4;
    });
    await first.context().close();
  });
  afterAll(async () => {
    await browser?.close();
    await slack?.stop();
  });

  for (const [size, viewport] of Object.entries(VIEWPORTS)) {
    for (const which of ["two", "forty"] as const) {
      it(`${which === "two" ? "2-field" : "40-field"} plan at ${size} (${viewport.width}×${viewport.height}): Approve on the first screen and kept in reach, nothing wider than the window`, async () => {
        const page = await signedIn("U0ALICE", viewport);
        const plan = plans[which];
        await page.goto(`${origin}/plans/${plan.id}`);
        await shoot(page, `plan-${which}-${size}`);
        const [scrollWidth, innerWidth] = await widths(page);
        expect(scrollWidth).toBeLessThanOrEqual(innerWidth);

        const approve = page.getByRole("button", { name: "Approve" });
        const bar = page.getByRole("region", { name: "Decision", exact: true });
        expect(await bar.innerText()).toMatch(which === "two" ? /^2 changes\s+Approve\s+Reject$/ : /^40 changes\s+Approve\s+Reject$/);
        const box = (await approve.boundingBox())!;
        expect(box.y + box.height, "Approve inside the first screen").toBeLessThanOrEqual(viewport.height);
        const firstRow = (await page.locator(".diff tbody tr").first().boundingBox())!;
        expect(firstRow.y + firstRow.height, "the first change shows above the bar").toBeLessThanOrEqual((await bar.boundingBox())!.y);

        // The header is one row: the sign-out button sits level with the home link and does not wrap.
        const home = (await page.getByRole("link", { name: "Countersign" }).boundingBox())!;
        const signOut = (await page.getByRole("button", { name: "Sign out" }).boundingBox())!;
        expect(Math.abs(home.y + home.height / 2 - (signOut.y + signOut.height / 2))).toBeLessThan(8);
        expect(signOut.height).toBeLessThan(40);
        expect((await page.locator("header.top").boundingBox())!.height).toBeLessThan(60);
        expect(await page.locator("header .who-name").innerText()).toBe("Alice Reviewer");

        // Reject with no reason yet: nothing is sent, and the reason field comes into view above the bar.
        await page.getByRole("button", { name: "Reject" }).click();
        await expect.poll(() => page.evaluate("document.activeElement?.id")).toBe("reason");
        const reason = (await page.getByLabel("Reason").boundingBox())!;
        expect(reason.y).toBeGreaterThanOrEqual(0);
        expect(reason.y + reason.height, "the reason field is not under the bar").toBeLessThanOrEqual((await bar.boundingBox())!.y);
        expect(page.url()).toBe(`${origin}/plans/${plan.id}`);
        await page.screenshot({ path: `${SHOTS}/plan-${which}-${size}-reject-reason.png` });

        // Scrolled to the end, the bar is still there and hides nothing of the page.
        await page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)");
        const end = (await approve.boundingBox())!;
        expect(end.y + end.height).toBeLessThanOrEqual(viewport.height);
        const lastEvent = (await page.locator(".timeline li").last().boundingBox())!;
        expect(lastEvent.y + lastEvent.height, "the timeline ends above the bar").toBeLessThanOrEqual((await bar.boundingBox())!.y);
        await page.screenshot({ path: `${SHOTS}/plan-${which}-${size}-end.png` });

        // People by name: Bob and Carol share "Sam", so each comes with the id.
        const decisions = await page.locator("#decisions + p").innerText();
        expect(decisions).toContain("May approve: Alice Reviewer, Sam U0BOB, Sam U0CAROL");
        expect(await page.locator("dl.meta").innerText()).toContain("Rita Requester");

        await approve.click();
        await page.getByRole("status").filter({ hasText: "Your approval is recorded" }).waitFor();
        expect(await bar.count()).toBe(0);
        // Approved once per size: the next size reviews a fresh copy.
        plans[which] = await propose(`${plan.plan.title} (again)`, requests[which]);
      });
    }

    it(`the plan list at ${size}: rows labelled on the phone, nothing wider than the window`, async () => {
      const page = await signedIn("U0ALICE", viewport);
      await shoot(page, `list-${size}`);
      const [scrollWidth, innerWidth] = await widths(page);
      expect(scrollWidth).toBeLessThanOrEqual(innerWidth);
      const row = page.locator("tr", { has: page.getByRole("link", { name: plans.two.plan.title, exact: true }) });
      const label = (cell: string) =>
        row
          .locator(`td[data-label="${cell}"]`)
          .evaluate(
            (td) => (globalThis as unknown as { getComputedStyle(e: unknown, p: string): { content: string } }).getComputedStyle(td, "::before").content,
          );
      for (const cell of ["Agent", "Target", "Time left", "Hash"]) expect(await label(cell)).toBe(size === "phone" ? `"${cell}"` : "none");
    });

    it(`the outcome at ${size}: rows from 1, "applied · verified" on one line`, async () => {
      const page = await signedIn("U0ALICE", viewport);
      await page.goto(`${origin}/plans/${plans.applied.id}`);
      await shoot(page, `outcome-${size}`);
      const [scrollWidth, innerWidth] = await widths(page);
      expect(scrollWidth).toBeLessThanOrEqual(innerWidth);
      expect(await page.locator("table.outcome td.n").allInnerTexts()).toEqual(["1", "2"]);
      // On the phone the number reads "Action 1": its label is drawn before it.
      const before = await page
        .locator("table.outcome td.n")
        .first()
        .evaluate((td) => (globalThis as unknown as { getComputedStyle(e: unknown, p: string): { content: string } }).getComputedStyle(td, "::before").content);
      expect(before).toBe(size === "phone" ? '"Action "' : "none");
      for (const result of await page.locator('table.outcome td[data-label="Result"]').all()) {
        const status = (await result.locator(".badge").first().boundingBox())!;
        const verified = (await result.locator('[data-verified="true"]').boundingBox())!;
        expect(Math.abs(status.y + status.height / 2 - (verified.y + verified.height / 2)), "on one line").toBeLessThan(6);
      }
    });
  }
});
