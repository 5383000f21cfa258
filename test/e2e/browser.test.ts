import { createServer } from "node:net";
import { sql } from "drizzle-orm";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { JsonResourceServer } from "../../src/demo/json-resource-server.ts";
import { runServer, type RunningServer } from "../../src/server/run-server.ts";
import { addAgent } from "../../src/service/add-agent.ts";
import type { AgentIdentity } from "../../src/service/authenticate-agent.ts";
import { expireDue } from "../../src/service/expire-due.ts";
import { createLoginLink } from "../../src/service/login-links.ts";
import type { PlanView } from "../../src/service/plan-view.ts";
import { submitPlan } from "../../src/service/submit-plan.ts";
import type { Database } from "../../src/store/db.ts";
import { chromiumAvailable, launchChromium, screenshotPath } from "../support/chromium.ts";
import { databaseKinds } from "../support/databases.ts";
import { READ_TOKEN, silentLogger, targetConfig, testConfig, testGrantKeys, WRITE_TOKEN } from "../support/harness.ts";
import { SlackEmulator } from "../support/slack-emulator.ts";
import { SlackRequests } from "../support/slack-requests.ts";
import { waitFor } from "../support/wait-for.ts";

const SIGNING_SECRET = "slack-signing-secret-for-tests";
const HOSTILE = `<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2"> "quotes" & <!channel>`;

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

describe.skipIf(!chromiumAvailable).each(databaseKinds)("browser review in Chromium on $name", (kind) => {
  let database: Database;
  let target: JsonResourceServer;
  let slack: SlackEmulator;
  let server: RunningServer;
  let agent: AgentIdentity;
  let browser: Browser;
  let origin: string;
  let clockOffsetMs = 0;
  let n = 0;
  const contexts: BrowserContext[] = [];

  const propose = async (overrides: Record<string, unknown> = {}): Promise<PlanView> => {
    const i = n++;
    return (await submitPlan(server.ctx, agent, {
      title: `Update contact ${i}`,
      reason: "Customer asked by phone, ticket 4411",
      onBehalfOf: "U0REQUESTER",
      actions: [{ kind: "http.json", target: "crm", path: `/contacts/${i}`, op: "merge", body: { email: `c${i}@new.example`, tier: "gold" } }],
      ...overrides,
    })).plan;
  };

  /** A browser signed in as `userId` through a one-time link, the way a person does it. */
  const signedIn = async (userId: string, viewport = { width: 1280, height: 900 }): Promise<Page> => {
    const context = await browser.newContext({ viewport });
    contexts.push(context);
    const page = await context.newPage();
    const { url } = await createLoginLink(server.ctx, { userId, name: userId === "U0ALICE" ? "Alice Reviewer" : undefined, via: "cli" });
    await page.goto(url);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(`${origin}/plans`);
    return page;
  };
  const statusOf = async (plan: PlanView) => (await database.rows<{ status: string }>(sql`SELECT status FROM plans WHERE id = ${plan.id}`))[0]!.status;

  beforeAll(async () => {
    database = await kind.open();
    target = new JsonResourceServer({
      seed: Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`/contacts/${i}`, { id: i, name: `Contact ${i}`, email: `c${i}@old.example`, tier: "silver" }])),
      readTokens: [READ_TOKEN],
      writeToken: WRITE_TOKEN,
    });
    await target.start();
    slack = new SlackEmulator({ teamId: "T0TEST" });
    await slack.start();
    const port = await freePort();
    origin = `http://127.0.0.1:${port}`;
    const config = {
      ...testConfig({ crm: targetConfig(target.url), grouped: targetConfig(target.url, { policy: { approvers: ["S0WEBREVIEW"], requiredApprovals: 1 } }) }),
      port,
      publicUrl: origin,
      slack: { enabled: true as const, botToken: slack.botToken, signingSecret: SIGNING_SECRET, appToken: undefined, apiUrl: slack.url, reviewChannel: "C0REVIEW" },
    };
    server = await runServer({ config, logger: silentLogger, database, grantKey: (await testGrantKeys()).signing, hostname: "127.0.0.1", sweepMs: 3_600_000, clock: () => new Date(Date.now() + clockOffsetMs) });
    agent = await addAgent(database, "browser-agent");
    slack.setUsergroup("S0WEBREVIEW", ["U0GROUPIE"]);
    browser = await launchChromium();
  });
  afterEach(async () => {
    await Promise.all(contexts.splice(0).map((c) => c.close()));
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await slack?.stop();
    await target?.stop();
    await database?.close();
  });

  it("login link → list → plan → Approve → the status changes on the page", async () => {
    const plan = await propose();
    const page = await signedIn("U0ALICE");
    await expect(page.getByText("Signed in as")).toBeTruthy();
    const cookies = await page.context().cookies();
    const session = cookies.find((c) => c.name === "cs_session")!;
    expect(session).toMatchObject({ httpOnly: true, sameSite: "Lax", secure: false });

    const row = page.getByRole("row", { name: new RegExp(plan.plan.title) });
    await expect(row.getByText("yours to decide").isVisible()).resolves.toBe(true);
    await page.screenshot({ path: screenshotPath(`list-desktop-${kind.name}`), fullPage: true });
    await row.getByRole("link", { name: plan.plan.title }).click();
    await page.waitForURL(`${origin}/plans/${plan.id}`);
    expect(await page.locator(".diff").first().innerText()).toContain("c0@old.example");
    await page.screenshot({ path: screenshotPath(`plan-desktop-${kind.name}`), fullPage: true });

    await page.getByRole("button", { name: "Approve" }).click();
    await page.waitForURL(/notice=approved/);
    expect(await page.getByRole("status").innerText()).toContain("approval is recorded");
    expect(await page.locator(".badge").first().innerText()).toBe("approved");
    expect(await statusOf(plan)).toBe("approved");
    const [decision] = await database.rows<{ user_id: string; via: string; plan_hash: string }>(sql`SELECT user_id, via, plan_hash FROM decisions WHERE plan_id = ${plan.id}`);
    expect(decision).toEqual({ user_id: "U0ALICE", via: "web", plan_hash: plan.hash });
    expect(await page.getByRole("button", { name: "Approve" }).count()).toBe(0);
  });

  it("reject needs a reason, and records it", async () => {
    const plan = await propose();
    const page = await signedIn("U0BOB");
    await page.goto(`${origin}/plans/${plan.id}`);
    await page.getByRole("button", { name: "Reject" }).click(); // empty reason: the browser refuses to submit
    expect(page.url()).toBe(`${origin}/plans/${plan.id}`);
    await page.getByLabel("Reason").fill("Wrong customer");
    await page.getByRole("button", { name: "Reject" }).click();
    await page.waitForURL(/notice=rejected/);
    expect(await statusOf(plan)).toBe("rejected");
    expect(await page.getByText("Wrong customer").count()).toBeGreaterThan(0);
  });

  it("a plan decided in Slack updates an open page without a reload", async () => {
    const plan = await propose();
    const page = await signedIn("U0CAROL");
    await page.goto(`${origin}/plans/${plan.id}`);
    await page.evaluate(() => ((globalThis as unknown as { marker: number }).marker = 42));
    expect(await page.locator(".badge").first().innerText()).toBe("pending");
    const ts = await waitFor("the Slack preview", async () => (await database.rows<{ ts: string }>(sql`SELECT ts FROM slack_messages WHERE plan_id = ${plan.id}`))[0]?.ts);
    const clicks = new SlackRequests({ baseUrl: server.url, signingSecret: SIGNING_SECRET, teamId: "T0TEST" });
    const res = await clicks.blockAction({ user: "U0ALICE", actionId: "approve", value: JSON.stringify({ planId: plan.id, hash: plan.hash }), channelId: "C0REVIEW", messageTs: ts });
    expect(res.status).toBe(200);
    await page.locator(".badge", { hasText: "approved" }).first().waitFor({ timeout: 10_000 });
    expect(await page.evaluate(() => (globalThis as unknown as { marker?: number }).marker)).toBe(42); // same document: no reload
    expect(await page.getByText("Approved by U0ALICE", { exact: false }).first().innerText()).toContain("via slack");
  });

  it("an expired plan shows expired and offers no buttons", async () => {
    const plan = await propose({ ttlSeconds: 10 });
    clockOffsetMs += 11_000;
    await expireDue(server.ctx);
    const page = await signedIn("U0ALICE");
    await page.goto(`${origin}/plans/${plan.id}`);
    expect(await page.locator(".badge").first().innerText()).toBe("expired");
    expect(await page.getByRole("button", { name: "Approve" }).count()).toBe(0);
    expect(await page.getByRole("button", { name: "Reject" }).count()).toBe(0);
  });

  it("at phone width the list and the plan stay usable, and a keyboard alone can approve", async () => {
    const plan = await propose();
    const page = await signedIn("U0ALICE", { width: 390, height: 844 });
    await page.screenshot({ path: screenshotPath(`list-phone-${kind.name}`), fullPage: true });
    await page.goto(`${origin}/plans/${plan.id}`);
    await page.screenshot({ path: screenshotPath(`plan-phone-${kind.name}`), fullPage: true });
    expect(await page.evaluate(() => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await page.getByRole("button", { name: "Approve" }).focus();
    await page.keyboard.press("Enter");
    await page.waitForURL(/notice=approved/);
    expect(await statusOf(plan)).toBe("approved");
  });

  it("a used or expired login link is refused; a GET never spends one; every login gets a new session", async () => {
    const { url } = await createLoginLink(server.ctx, { userId: "U0ALICE", via: "cli" });
    const token = url.split("/login/")[1]!;
    const post = () => fetch(`${origin}/login/${token}`, { method: "POST", headers: { origin }, redirect: "manual" });
    expect((await fetch(url)).status).toBe(200); // a link previewer's GET
    const first = await post();
    expect(first.status).toBe(303);
    const again = await post();
    expect(again.status).toBe(403);
    expect(await again.text()).toContain("already used or has expired");

    const { url: second } = await createLoginLink(server.ctx, { userId: "U0ALICE", via: "cli" });
    const secondLogin = await fetch(second.replace("/login/", "/login/"), { method: "POST", headers: { origin }, redirect: "manual" });
    expect(secondLogin.headers.get("set-cookie")).not.toBe(first.headers.get("set-cookie"));

    const { url: old } = await createLoginLink(server.ctx, { userId: "U0ALICE", via: "cli" });
    clockOffsetMs += 5 * 60_000 + 1000;
    const late = await fetch(old, { method: "POST", headers: { origin }, redirect: "manual" });
    expect(late.status).toBe(403);
  });

  it("a POST without the CSRF token, or from another origin, gets 403 and changes nothing", async () => {
    const plan = await propose();
    const page = await signedIn("U0ALICE");
    const cookie = (await page.context().cookies()).find((c) => c.name === "cs_session")!;
    const headers = { cookie: `cs_session=${cookie.value}`, "content-type": "application/x-www-form-urlencoded" };
    const csrf = await (async () => {
      await page.goto(`${origin}/plans/${plan.id}`);
      return page.locator('input[name="_csrf"]').first().getAttribute("value");
    })();
    const noToken = await fetch(`${origin}/plans/${plan.id}/approve`, { method: "POST", headers: { ...headers, origin }, body: `hash=${encodeURIComponent(plan.hash)}`, redirect: "manual" });
    expect(noToken.status).toBe(403);
    const crossSite = await fetch(`${origin}/plans/${plan.id}/approve`, { method: "POST", headers: { ...headers, origin: "https://evil.example" }, body: `hash=${encodeURIComponent(plan.hash)}&_csrf=${csrf}`, redirect: "manual" });
    expect(crossSite.status).toBe(403);
    const noOrigin = await fetch(`${origin}/plans/${plan.id}/approve`, { method: "POST", headers, body: `hash=${encodeURIComponent(plan.hash)}&_csrf=${csrf}`, redirect: "manual" });
    expect(noOrigin.status).toBe(403);
    expect(await statusOf(plan)).toBe("pending");
    const stale = await fetch(`${origin}/plans/${plan.id}/approve`, { method: "POST", headers: { ...headers, origin }, body: `hash=${encodeURIComponent("sha256:" + "0".repeat(64))}&_csrf=${csrf}`, redirect: "manual" });
    expect(stale.headers.get("location")).toContain("notice=hash_mismatch");
    expect(await statusOf(plan)).toBe("pending");
  });

  it("a member of an approver user group sees the plan as theirs and approves it; a non-member gets no buttons", async () => {
    const plan = await propose({ actions: [{ kind: "http.json", target: "grouped", path: "/contacts/39", op: "merge", body: { tier: "gold" } }] });
    const outsider = await signedIn("U0ALICE");
    await outsider.goto(`${origin}/plans/${plan.id}`);
    expect(await outsider.getByRole("button", { name: "Approve" }).count()).toBe(0);
    expect(await outsider.getByText("You are not an approver for this plan.").count()).toBe(1);
    const member = await signedIn("U0GROUPIE");
    await expect(member.getByRole("row", { name: new RegExp(plan.plan.title) }).getByText("yours to decide").isVisible()).resolves.toBe(true);
    await member.goto(`${origin}/plans/${plan.id}`);
    await member.getByRole("button", { name: "Approve" }).click();
    await member.waitForURL(/notice=approved/);
    expect(await statusOf(plan)).toBe("approved");
  });

  it("hostile agent text renders literally and runs nothing", async () => {
    const plan = await propose({ title: HOSTILE, reason: HOSTILE });
    const page = await signedIn("U0ALICE");
    await page.goto(`${origin}/plans/${plan.id}`);
    expect(await page.locator("h1").innerText()).toBe(HOSTILE);
    expect(await page.evaluate(() => (globalThis as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(await page.locator('img[src="x"]').count()).toBe(0);
    await page.goto(`${origin}/plans`);
    expect(await page.getByRole("link", { name: HOSTILE }).count()).toBe(1);
    expect(await page.evaluate(() => (globalThis as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
  });
});
