import { copyFileSync, mkdirSync } from "node:fs";
import { sql } from "drizzle-orm";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JsonResourceServer } from "../../src/demo/json-resource-server.ts";
import { runExecutor } from "../../src/executor/run-executor.ts";
import { executorServer } from "../../src/executor/server-client.ts";
import { loadVerifyingKeys } from "../../src/grant/keys.ts";
import { shortHash } from "../../src/plan/fingerprint.ts";
import { runServer, type RunningServer } from "../../src/server/run-server.ts";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import type { AgentIdentity } from "../../src/service/agents/authenticate-agent.ts";
import { submitPlan } from "../../src/service/intake/submit-plan.ts";
import type { PlanView } from "../../src/service/lifecycle/plan-view.ts";
import { createLoginLink } from "../../src/service/sign-in/login-links.ts";
import type { Database } from "../../src/store/db.ts";
import { chromiumAvailable, launchChromium, screenshotPath } from "../support/chromium.ts";
import type { TestDatabaseKind } from "../support/databases.ts";
import { freePort } from "../support/free-port.ts";
import { READ_TOKEN, silentLogger, targetConfig, testConfig, testGrantKeys, WRITE_TOKEN } from "../support/harness.ts";
import { SlackEmulator, type SlackMessage } from "../support/slack-emulator.ts";
import { httpInteractions, SlackPayloads, SlackRequests, type SlackInteractions } from "../support/slack-requests.ts";
import { SocketModeEmulator } from "../support/socket-mode-emulator.ts";
import { waitFor } from "../support/wait-for.ts";

const REVIEW = "C0REVIEW";
const SIGNING_SECRET = "slack-signing-secret-for-edits";
const EXECUTOR_TOKEN = "executor-token-for-edits-0123456789";
/** Agent text a reviewer sees in the dialog and on the page exactly as it is, never as markup or a mention. */
const HOSTILE = `<!channel> <script>window.__pwned=1</script> *bold*`;

/**
 * Edit before approve end to end, registered once here: test/e2e/edit.test.ts runs it on PGlite
 * over Slack's HTTP door with the browser (npm test), test/slow/edit-socket-postgres.test.ts on
 * PostgreSQL over Socket Mode. The whole server, the Slack emulator over HTTP, a target that
 * counts its writes and an executor in this process: an Edit click opens the dialog, its
 * submission makes a new version in the same thread, the editor cannot approve it, someone else
 * does, and the target ends up holding the edited value, written once.
 */
export function editScenarios(
  kind: TestDatabaseKind,
  door: "http" | "socket",
  options: { browser?: { name: "desktop" | "phone"; viewport: { width: number; height: number } } },
): void {
  describe(`edit before approve in Slack (${door})${options.browser ? ` and the browser (${options.browser.name})` : ""}, on ${kind.name}`, () => {
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

    beforeAll(async () => {
      s.database = await kind.open();
      s.target = new JsonResourceServer({
        seed: Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`/contacts/${i}`, { id: i, email: `c${i}@old.example`, apiToken: `tok-${i}` }])),
        readTokens: [READ_TOKEN],
        writeToken: WRITE_TOKEN,
      });
      await s.target.start();
      s.slack = new SlackEmulator({ teamId: "T0TEST" });
      await s.slack.start();
      if (door === "socket") {
        s.socket = new SocketModeEmulator(s.slack);
        await s.socket.start();
      }
      const port = await freePort();
      s.origin = `http://127.0.0.1:${port}`;
      s.server = await runServer({
        config: {
          ...testConfig({ crm: targetConfig(s.target.url) }, { approvers: ["U0ALICE", "U0BOB", "U0CAROL"], requiredApprovals: 1 }),
          port,
          publicUrl: s.origin,
          executorToken: EXECUTOR_TOKEN,
          slack: {
            enabled: true as const,
            botToken: s.slack.botToken,
            ...(door === "http" ? { signingSecret: SIGNING_SECRET, appToken: undefined } : { signingSecret: undefined, appToken: s.socket.appToken }),
            apiUrl: s.slack.url,
            reviewChannel: REVIEW,
            digest: { afterSeconds: 0 },
          },
        },
        logger: silentLogger,
        database: s.database,
        grantKey: (await testGrantKeys()).signing,
        hostname: "127.0.0.1",
        sweepMs: 3_600_000,
        remindMs: 3_600_000,
        deliverMs: 50,
      });
      s.door =
        door === "http"
          ? httpInteractions(new SlackRequests({ baseUrl: s.server.url, signingSecret: SIGNING_SECRET, teamId: "T0TEST" }))
          : s.socket.interactions(new SlackPayloads({ teamId: "T0TEST" }));
      s.agent = await addAgent(s.server.ctx, { name: "edited-agent" });
    });

    afterAll(async () => {
      await s.server?.close();
      await s.socket?.stop();
      await s.slack?.stop();
      await s.target?.stop();
      await s.database?.close();
    });

    let contact = 0;
    const propose = async (): Promise<PlanView> => {
      const n = contact++;
      const { plan } = await submitPlan(s.server.ctx, {
        agent: s.agent,
        request: {
          title: `Fix contact ${n} ${HOSTILE}`,
          onBehalfOf: "U0REQUESTER",
          actions: [
            {
              kind: "http.json",
              target: "crm",
              path: `/contacts/${n}`,
              op: "merge",
              body: { email: `c${n}@agent.example`, note: HOSTILE, apiToken: `tok-agent-${n}` },
            },
          ],
        },
      });
      return plan;
    };
    const previewOf = async (planId: string): Promise<SlackMessage> => {
      const ts = await waitFor(`the preview of ${planId}`, async () => {
        const [row] = await s.database.rows<{ ts: string }>(sql`SELECT ts FROM slack_messages WHERE plan_id = ${planId}`);
        return row?.ts;
      });
      return waitFor("the message in the emulator", () =>
        s.slack
          .messagesIn(REVIEW)
          .flatMap((m) => [m, ...m.replies])
          .find((m) => m.ts === ts),
      );
    };
    const buttons = (m: SlackMessage) =>
      (m.blocks ?? []).flatMap((b) =>
        (b as { type: string }).type === "actions" ? ((b as { elements: { action_id: string; value?: string }[] }).elements ?? []) : [],
      );
    const click = (m: SlackMessage, user: string, actionId: string, triggerId?: string) =>
      s.door.blockAction({
        user,
        actionId,
        value: buttons(m).find((b) => b.action_id === actionId)!.value!,
        channelId: REVIEW,
        messageTs: m.ts,
        ...(triggerId ? { triggerId } : {}),
      });
    const statusOf = async (planId: string) => (await s.database.rows<{ status: string }>(sql`SELECT status FROM plans WHERE id = ${planId}`))[0]?.status;
    const versionOf = (planId: string) =>
      waitFor(
        `the version replacing ${planId}`,
        async () => (await s.database.rows<{ id: string; hash: string }>(sql`SELECT id, hash FROM plans WHERE supersedes = ${planId}`))[0],
      );

    it("Edit opens a dialog of the plan's values; a bare word keeps it open with the reason; the saved edit is a new version in the thread that someone else approves and the executor applies once", async () => {
      const plan = await propose();
      const preview = await previewOf(plan.id);
      expect(buttons(preview).map((b) => b.action_id)).toEqual(["approve", "reject", "edit", "view_full_plan"]);

      const triggerId = `edit-${plan.id}`;
      await click(preview, "U0BOB", "edit", triggerId);
      const opened = await waitFor("the edit dialog", () => s.slack.views.find((v) => v.trigger_id === triggerId));
      expect(opened.view).toMatchObject({ type: "modal", callback_id: "edit" });
      const blocks = opened.view.blocks as { type: string; block_id?: string; element?: { initial_value?: string } }[];
      expect(blocks.filter((b) => b.type === "input").map((b) => b.block_id)).toEqual(["0:/email", "0:/note"]);
      // The agent's text is the value to edit, exactly, never markup or a mention; the secret is not offered.
      expect(blocks.find((b) => b.block_id === "0:/note")!.element!.initial_value).toBe(JSON.stringify(HOSTILE));
      expect(JSON.stringify(opened.view)).not.toContain("tok-");
      expect(JSON.stringify(opened.view)).toContain("1 secret value is carried over unchanged");
      const meta = opened.view.private_metadata as string;

      const bare = await s.door.viewSubmission({
        user: "U0BOB",
        callbackId: "edit",
        privateMetadata: meta,
        values: { "0:/email": { value: { type: "plain_text_input", value: "c0@reviewer.example" } } },
      });
      expect(bare.response).toMatchObject({ response_action: "errors", errors: { "0:/email": 'not JSON: quote strings ("c0@reviewer.example")' } });
      expect(await statusOf(plan.id)).toBe("pending");

      const saved = await s.door.viewSubmission({
        user: "U0BOB",
        callbackId: "edit",
        privateMetadata: meta,
        values: {
          "0:/email": { value: { type: "plain_text_input", value: '"c0@reviewer.example"' } },
          "0:/note": { value: { type: "plain_text_input", value: JSON.stringify(HOSTILE) } },
        },
      });
      expect(saved).toEqual({ acked: true, response: undefined });
      const next = await versionOf(plan.id);
      await waitFor("the old version superseded", async () => (await statusOf(plan.id)) === "superseded");

      // The new version is a broadcast reply in the same thread, with its own buttons and who edited it.
      const fresh = await previewOf(next.id);
      expect(fresh.thread_ts).toBe(preview.ts);
      expect(buttons(fresh).map((b) => b.action_id)).toContain("approve");
      const shown = JSON.stringify(fresh.blocks);
      expect(shown).toContain("values edited by <@U0BOB>");
      expect(shown).toContain(`Changed since version ${"`"}${shortHash(plan.hash)}`);
      expect(shown).toContain("c0@reviewer.example");
      expect(shown).not.toContain("<!channel>");
      // The old one loses its buttons, says whose edit replaced it, and the thread is told.
      await waitFor("the old preview updated", () => {
        const old = s.slack.message(REVIEW, preview.ts)!;
        return !buttons(old).some((b) => b.action_id === "approve") && JSON.stringify(old.blocks).includes("edited by <@U0BOB>");
      });
      await waitFor("the edit told in the thread", () => s.slack.thread(REVIEW, preview.ts).some((r) => (r.text ?? "").includes("Values edited by <@U0BOB>")));
      await waitFor("the editor told", () =>
        s.slack.ephemerals.some((e) => e.user === "U0BOB" && (e.text ?? "").includes(`Your edit is version ${shortHash(next.hash)}`)),
      );

      // The editor is now a requester: their Approve is refused, and said so to them alone.
      await click(fresh, "U0BOB", "approve");
      await waitFor("the editor refused", () => s.slack.ephemerals.some((e) => e.user === "U0BOB" && /requested on your behalf/.test(e.text ?? "")));
      expect(await statusOf(next.id)).toBe("pending");
      await click(fresh, "U0ALICE", "approve");
      await waitFor("approval", async () => (await statusOf(next.id)) === "approved");

      const writes = s.target.writes().length;
      const executor = runExecutor({
        server: executorServer(s.server.url, EXECUTOR_TOKEN),
        keys: await loadVerifyingKeys((await testGrantKeys()).publicPem),
        environment: "test",
        targets: { crm: targetConfig(s.target.url, { write: { headers: { Authorization: `Bearer ${WRITE_TOKEN}` } } }) },
        logger: silentLogger,
      });
      try {
        await waitFor("apply", async () => (await statusOf(next.id)) === "applied");
      } finally {
        await executor.stop();
      }
      expect(s.target.writes().length).toBe(writes + 1);
      // The secret the reviewer never saw is carried over as the agent sent it.
      expect(s.target.get("/contacts/0")).toEqual({ id: 0, email: "c0@reviewer.example", note: HOSTILE, apiToken: "tok-agent-0" });
    });

    it("someone who may not decide the plan is told at the click, and no dialog opens", async () => {
      const plan = await propose();
      const preview = await previewOf(plan.id);
      const triggerId = `refused-${plan.id}`;
      await click(preview, "U0REQUESTER", "edit", triggerId);
      await waitFor("the requester told why", () => s.slack.ephemerals.some((e) => e.user === "U0REQUESTER" && /requested on your behalf/.test(e.text ?? "")));
      expect(s.slack.views.some((v) => v.trigger_id === triggerId)).toBe(false);
    });

    const shown = options.browser;
    if (!shown) return;
    /** Saved where the test results are, and under /tmp/shots to look at. */
    const screenshot = async (page: Page, name: string) => {
      const shot = screenshotPath(`${name}-${shown.name}`);
      await page.screenshot({ path: shot, fullPage: true });
      mkdirSync("/tmp/shots", { recursive: true });
      copyFileSync(shot, `/tmp/shots/${name}-${shown.name}.png`);
    };
    /** Nothing wider than the window: no sideways scrolling at this width. */
    const fitsWidth = async (page: Page) => {
      const [scrollWidth, innerWidth] = (await page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")) as [number, number];
      return scrollWidth <= innerWidth;
    };
    describe.skipIf(!chromiumAvailable)(`in the browser (${shown.name}, ${shown.viewport.width}x${shown.viewport.height})`, () => {
      let browser: Browser;
      beforeAll(async () => {
        browser = await launchChromium();
      });
      afterAll(async () => {
        await browser?.close();
      });

      it("the plan page's Edit values form: a bare word is refused with the form open on what was typed; a value saved opens the new version, which the editor may not approve", async () => {
        const plan = await propose();
        const context = await browser.newContext({ viewport: shown.viewport });
        try {
          const page = await context.newPage();
          const { url } = await createLoginLink(s.server.ctx, { userId: "U0CAROL", via: "cli" });
          await page.goto(url);
          await page.getByRole("button", { name: "Sign in" }).click();
          await page.waitForURL(`${s.origin}/plans`);
          await page.goto(`${s.origin}/plans/${plan.id}`);
          await page.getByText("Edit values").click();
          const email = page.getByLabel("/email");
          await expect.poll(() => email.inputValue()).toBe(JSON.stringify(`c${contact - 1}@agent.example`));
          // The secret is named, not shown; hostile agent text is the value, not markup.
          await expect.poll(() => page.locator("[data-secret]").innerText()).toContain("/apiToken");
          expect(await page.content()).not.toContain("tok-");
          expect(await page.evaluate(() => (globalThis as unknown as { __pwned?: number }).__pwned)).toBeUndefined();

          await email.fill("carol@web.example");
          await page.getByRole("button", { name: "Save as a new version" }).click();
          await expect.poll(() => page.getByRole("alert").innerText()).toContain('not JSON: quote strings ("carol@web.example")');
          expect(await page.getByLabel("/email").inputValue()).toBe("carol@web.example");
          expect(await statusOf(plan.id)).toBe("pending");
          expect(await fitsWidth(page)).toBe(true);
          await screenshot(page, "edit-form");

          await page.getByLabel("/email").fill('"carol@web.example"');
          await page.getByRole("button", { name: "Save as a new version" }).click();
          const next = await versionOf(plan.id);
          await page.waitForURL(`${s.origin}/plans/${next.id}`);
          const body = await page.locator("main").innerText();
          expect(body).toContain("values edited by");
          expect(body).toContain(`Changed since version ${shortHash(plan.hash)}`);
          expect(body).toContain("carol@web.example");
          expect(await page.getByRole("button", { name: "Approve" }).count()).toBe(0);
          expect(await fitsWidth(page)).toBe(true);
          await screenshot(page, "edited-version");
        } finally {
          await context.close();
        }
      });
    });
  });
}
