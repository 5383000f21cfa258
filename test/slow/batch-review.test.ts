import { sql } from "drizzle-orm";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { JsonResourceServer } from "../../src/demo/json-resource-server.ts";
import { runServer, type RunningServer } from "../../src/server/run-server.ts";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import type { AgentIdentity } from "../../src/service/agents/authenticate-agent.ts";
import { submitPlan } from "../../src/service/intake/submit-plan.ts";
import type { PlanView } from "../../src/service/lifecycle/plan-view.ts";
import { createLoginLink } from "../../src/service/sign-in/login-links.ts";
import type { Database } from "../../src/store/db.ts";
import { chromiumAvailable, launchChromium, screenshotPath } from "../support/chromium.ts";
import { postgresKind } from "../support/databases.ts";
import { freePort } from "../support/free-port.ts";
import { READ_TOKEN, silentLogger, targetConfig, testConfig, testGrantKeys, WRITE_TOKEN } from "../support/harness.ts";
import { SlackEmulator, type JsonObject } from "../support/slack-emulator.ts";
import { SlackPayloads, type SlackInteractions } from "../support/slack-requests.ts";
import { SocketModeEmulator } from "../support/socket-mode-emulator.ts";
import { HUNDRED_MB, streamPost } from "../support/stream-post.ts";
import { waitFor } from "../support/wait-for.ts";

const VIEWPORTS = { desktop: { width: 1280, height: 900 }, phone: { width: 390, height: 844 } } as const;

/**
 * Batches of alike plans through both doors on PostgreSQL: Slack over Socket Mode (App Home's
 * "Review N like plans", the modal, Approve-all and Reject-all), and the browser in Chromium (the
 * list's offer, the batch page at desktop and phone sizes, Approve-all).
 */
describe.skipIf(!postgresKind)("batches over Socket Mode and in the browser on PostgreSQL", () => {
  const s = {} as {
    database: Database;
    target: JsonResourceServer;
    slack: SlackEmulator;
    socket: SocketModeEmulator;
    server: RunningServer;
    door: SlackInteractions;
    agent: AgentIdentity;
    origin: string;
  };
  let n = 0;

  beforeAll(async () => {
    s.database = await postgresKind!.open();
    s.target = new JsonResourceServer({
      seed: Object.fromEntries(
        Array.from({ length: 60 }, (_, i) => [`/contacts/${i}`, { id: i, name: `Contact ${i}`, email: `c${i}@old.example`, tier: "silver" }]),
      ),
      readTokens: [READ_TOKEN],
      writeToken: WRITE_TOKEN,
    });
    await s.target.start();
    s.slack = new SlackEmulator({ teamId: "T0TEST" });
    await s.slack.start();
    s.socket = new SocketModeEmulator(s.slack);
    await s.socket.start();
    const port = await freePort();
    s.origin = `http://127.0.0.1:${port}`;
    s.server = await runServer({
      config: {
        ...testConfig({ crm: targetConfig(s.target.url) }),
        port,
        publicUrl: s.origin,
        slack: {
          ...testConfig({}).slack,
          enabled: true as const,
          botToken: s.slack.botToken,
          signingSecret: undefined,
          appToken: s.socket.appToken,
          apiUrl: s.slack.url,
          reviewChannel: "C0REVIEW",
        },
      },
      logger: silentLogger,
      database: s.database,
      hostname: "127.0.0.1",
      grantKey: (await testGrantKeys()).signing,
      sweepMs: 3_600_000,
      remindMs: 3_600_000,
      deliverMs: 50,
    });
    s.door = s.socket.interactions(new SlackPayloads({ teamId: "T0TEST" }));
    s.agent = await addAgent(s.server.ctx, { name: "batch-agent" });
  });

  afterAll(async () => {
    await s.server?.close();
    await s.socket?.stop();
    await s.slack?.stop();
    await s.target?.stop();
    await s.database?.close();
  });

  /** `count` plans merging `fields` into contacts of their own: alike. */
  async function alike(count: number, fields: Record<string, string>): Promise<PlanView[]> {
    const made: PlanView[] = [];
    for (let k = 0; k < count; k++) {
      const i = n++;
      const body = Object.fromEntries(Object.entries(fields).map(([f, v]) => [f, `${v}${i}`]));
      const { plan } = await submitPlan(s.server.ctx, {
        agent: s.agent,
        request: {
          title: `Update contact ${i}`,
          onBehalfOf: "U0REQUESTER",
          actions: [{ kind: "http.json", target: "crm", path: `/contacts/${i}`, op: "merge", body }],
        },
      });
      made.push(plan);
    }
    return made;
  }
  const statuses = async (made: PlanView[]) =>
    (
      await s.database.rows<{ id: string; status: string }>(
        sql`SELECT id::text, status::text FROM plans WHERE id = ANY (${`{${made.map((p) => p.id).join(",")}}`}::uuid[])`,
      )
    ).map((r) => r.status);
  const elements = (view: JsonObject | undefined) =>
    ((view?.blocks as JsonObject[] | undefined) ?? []).flatMap((b) => (b.type === "actions" ? (b.elements as JsonObject[]) : []));
  /** The "Review N like plans" button on a person's Home for the group `like` opens, once it counts `count`. */
  const homeOffer = (user: string, like: string, count: number) =>
    waitFor(`${user}'s Home to offer ${count} alike plans`, async () =>
      elements(s.slack.homeOf(user)).find(
        (e) =>
          String(e.action_id).startsWith("batch_open_") &&
          JSON.parse(String(e.value)).like === like &&
          (e.text as JsonObject).text === `Review ${count} like plans`,
      ),
    );
  /** The modal a click opened, once it has been updated to hold `callbackId`. */
  const modalOpenedBy = (triggerId: string, callbackId: string) =>
    waitFor(`the modal of ${triggerId} to become ${callbackId}`, async () => {
      const opened = s.slack.views.find((v) => v.trigger_id === triggerId);
      return opened && opened.view.callback_id === callbackId ? opened.view : undefined;
    });
  const textOf = (value: unknown) => JSON.stringify(value);
  const pageWidth = (page: Page) =>
    page.evaluate(() => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth);

  it("Slack: Home offers the alike plans, the modal shows each, Approve-all is acked at once and the view then says what became of each", async () => {
    const made = await alike(4, { email: "slack" });
    const offer = await homeOffer("U0ALICE", made[0]!.id, 4);

    const trigger = "trigger-open-approve";
    const opened = await s.door.blockAction({
      user: "U0ALICE",
      actionId: String(offer.action_id),
      value: String(offer.value),
      messageTs: "0",
      triggerId: trigger,
      payload: { channel: undefined, container: { type: "view" } },
    });
    expect(opened.acked).toBe(true);
    const modal = await modalOpenedBy(trigger, "batch_approve");
    for (const p of made) expect(textOf(modal.blocks)).toContain(`*${p.plan.title}*`);
    expect(modal.submit).toMatchObject({ text: "Approve all 4" });

    const submitted = await s.door.viewSubmission({
      user: "U0ALICE",
      callbackId: "batch_approve",
      privateMetadata: String(modal.private_metadata),
      viewId: String(modal.id),
    });
    expect(submitted.response).toMatchObject({ response_action: "update", view: { title: { text: "Like plans" } } });
    const answer = await waitFor("the batch's answer", async () => {
      const view = s.slack.viewOf(String(modal.id));
      return view?.title && (view.title as JsonObject).text === "Approved like plans" ? view : undefined;
    });
    expect(textOf(answer.blocks), textOf(answer.blocks)).toContain("4 approved");
    expect(await statuses(made)).toEqual(Array(4).fill("approved"));
    const via = await s.database.rows<{ via: string; user_id: string }>(
      sql`SELECT via::text, user_id FROM decisions WHERE plan_id = ANY (${`{${made.map((p) => p.id).join(",")}}`}::uuid[])`,
    );
    expect(via).toEqual(Array(4).fill({ via: "slack", user_id: "U0ALICE" }));
  });

  it("Slack: Reject-all asks one reason in a dialog on top, and both views then show every plan rejected", async () => {
    const made = await alike(3, { tier: "gold" });
    const offer = await homeOffer("U0BOB", made[0]!.id, 3);
    const trigger = "trigger-open-reject";
    await s.door.blockAction({
      user: "U0BOB",
      actionId: String(offer.action_id),
      value: String(offer.value),
      messageTs: "0",
      triggerId: trigger,
      payload: { channel: undefined },
    });
    const modal = await modalOpenedBy(trigger, "batch_approve");
    const rejectAll = elements(modal).find((e) => e.action_id === "batch_reject_open")!;
    await s.door.blockAction({
      user: "U0BOB",
      actionId: "batch_reject_open",
      value: String(rejectAll.value),
      messageTs: "0",
      triggerId: "trigger-reject-dialog",
      payload: { channel: undefined, container: { type: "view", view_id: modal.id }, view: { id: modal.id, type: "modal" } },
    });
    const dialog = await waitFor("the reject dialog", async () => s.slack.views.find((v) => v.trigger_id === "trigger-reject-dialog" && v.pushed)?.view);
    expect(dialog.callback_id).toBe("batch_reject");

    const empty = await s.door.viewSubmission({
      user: "U0BOB",
      callbackId: "batch_reject",
      privateMetadata: String(dialog.private_metadata),
      viewId: String(dialog.id),
      reason: " ",
    });
    expect(empty.response).toMatchObject({ response_action: "errors", errors: { reason: expect.any(String) } });
    const sent = await s.door.viewSubmission({
      user: "U0BOB",
      callbackId: "batch_reject",
      privateMetadata: String(dialog.private_metadata),
      viewId: String(dialog.id),
      reason: "These tiers are wrong",
    });
    expect(sent.response).toMatchObject({ response_action: "update" });
    for (const id of [dialog.id, modal.id])
      await waitFor(`view ${String(id)} to show the answer`, async () => (textOf(s.slack.viewOf(String(id))).includes("3 rejected") ? true : undefined));
    expect(await statuses(made)).toEqual(Array(3).fill("rejected"));
    const reasons = await s.database.rows<{ reject_reason: string }>(
      sql`SELECT reject_reason FROM plans WHERE id = ANY (${`{${made.map((p) => p.id).join(",")}}`}::uuid[])`,
    );
    expect(reasons.map((r) => r.reject_reason)).toEqual(Array(3).fill("These tiers are wrong"));
  });

  describe.skipIf(!chromiumAvailable)("in Chromium", () => {
    let browser: Browser;
    const contexts: BrowserContext[] = [];
    beforeAll(async () => {
      browser = await launchChromium();
    });
    afterEach(async () => {
      await Promise.all(contexts.splice(0).map((c) => c.close()));
    });
    afterAll(async () => {
      await browser?.close();
    });

    const signedIn = async (userId: string, viewport: { width: number; height: number }) => {
      const context = await browser.newContext({ viewport });
      contexts.push(context);
      const page = await context.newPage();
      const { url } = await createLoginLink(s.server.ctx, { userId, name: "Carol Reviewer", via: "cli" });
      await page.goto(url);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.waitForURL(`${s.origin}/plans`);
      return page;
    };

    it("the list offers the alike plans; the batch page fits a phone and a desktop; Approve-all answers per plan", async () => {
      const made = await alike(12, { email: "web", tier: "platinum" });
      const phone = await signedIn("U0CAROL", VIEWPORTS.phone);
      await phone.screenshot({ path: screenshotPath("batch-list-phone") });
      await phone.getByRole("link", { name: "Review 12 like plans" }).click();
      await phone.waitForURL(/\/batches\/[0-9a-f-]{36}$/);
      const batchUrl = phone.url();
      await phone.getByRole("heading", { name: "Review 12 like plans" }).waitFor();
      // Nothing wider than the viewport, and the decision within reach in the first screen.
      expect(await pageWidth(phone)).toBeLessThanOrEqual(VIEWPORTS.phone.width);
      const approve = phone.getByRole("button", { name: "Approve all" });
      const box = (await approve.boundingBox())!;
      expect(box.y + box.height).toBeLessThanOrEqual(VIEWPORTS.phone.height);
      await phone.screenshot({ path: screenshotPath("batch-phone") });
      await phone.screenshot({ path: screenshotPath("batch-phone-full"), fullPage: true });

      const desktop = await signedIn("U0CAROL", VIEWPORTS.desktop);
      await desktop.goto(batchUrl);
      expect(await desktop.locator("section.card[aria-label^='Plan']").count()).toBe(12);
      expect(await desktop.locator(".diff").first().innerText()).toContain("c");
      await desktop.screenshot({ path: screenshotPath("batch-desktop") });

      // Reject-all without a reason is stopped by the browser; nothing is sent.
      await phone.getByRole("button", { name: "Reject all" }).click();
      expect(phone.url()).toBe(batchUrl);

      await approve.click();
      await phone.getByRole("heading", { name: /Approved like plans: 12 approved/ }).waitFor();
      expect(await pageWidth(phone)).toBeLessThanOrEqual(VIEWPORTS.phone.width);
      await phone.screenshot({ path: screenshotPath("batch-decided-phone"), fullPage: true });
      expect(await statuses(made)).toEqual(Array(12).fill("approved"));
    });

    it("a 100 MB post to a batch form is refused with 413 before it is read", async () => {
      const sent = await streamPost(`${s.origin}/batches/00000000-0000-4000-8000-000000000000/approve`, HUNDRED_MB, {
        chunked: false,
        headers: { origin: s.origin },
      });
      expect(sent.status).toBe(413);
      expect(sent.sentBytes).toBeLessThan(HUNDRED_MB);
    });
  });
});
