import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JsonResourceServer } from "../../src/demo/json-resource-server.ts";
import { runCli, startCli } from "../support/cli.ts";
import { SlackEmulator, type SlackMessage } from "../support/slack-emulator.ts";
import { httpInteractions, SlackPayloads, SlackRequests, type SlackInteractions } from "../support/slack-requests.ts";
import { SocketModeEmulator } from "../support/socket-mode-emulator.ts";
import { waitFor } from "../support/wait-for.ts";

/*
 * Bolt, the Slack Web API client and the Socket Mode client are bundled into dist/ and loaded
 * only when Slack is configured, so no other test that spawns the CLI runs that code as shipped.
 * Here the built `serve` posts a plan to the Slack emulator and takes an Approve click through
 * each door: signed HTTP and Socket Mode.
 */

const REVIEW = "C0REVIEW";
const SIGNING_SECRET = "built-door-signing-secret";
const READ_TOKEN = "read-token-built-door";
const lastLine = (text: string) => text.trimEnd().split("\n").at(-1)!;

describe.each(["http", "socket"] as const)("the built serve's Slack door over %s", (door) => {
  const slack = new SlackEmulator();
  const socket = new SocketModeEmulator(slack);
  const target = new JsonResourceServer({ seed: { "/contacts/1": { name: "Ana", email: "ana@old.example" } }, readTokens: [READ_TOKEN] });
  let dir: string;
  let server: Awaited<ReturnType<typeof startCli>>;
  let url: string;
  let interactions: SlackInteractions;

  beforeAll(async () => {
    await slack.start();
    await socket.start();
    await target.start();
    dir = mkdtempSync(path.join(os.tmpdir(), "countersign-built-door-"));
    writeFileSync(
      path.join(dir, "countersign.yml"),
      [
        `slack: { reviewChannel: ${REVIEW} }`,
        "executor: { expected: false }",
        "defaults: { approvers: [U0ALICE] }",
        "targets:",
        "  contacts:",
        "    adapter: http.json",
        `    baseUrl: ${target.url}`,
        `    read: { headers: { Authorization: "Bearer ${READ_TOKEN}" } }`,
        '    allow: { ops: [merge], paths: ["/contacts/*"] }',
      ].join("\n"),
    );
    const { privateKey } = generateKeyPairSync("ed25519");
    server = await startCli(["serve"], {
      cwd: dir,
      env: {
        LOG_LEVEL: "info",
        PORT: "0",
        HOST: "127.0.0.1",
        COUNTERSIGN_DATA_DIR: path.join(dir, "data"),
        COUNTERSIGN_GRANT_PRIVATE_KEY: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
        SLACK_BOT_TOKEN: slack.botToken,
        SLACK_API_URL: slack.url,
        ...(door === "http" ? { SLACK_SIGNING_SECRET: SIGNING_SECRET } : { SLACK_APP_TOKEN: socket.appToken }),
      },
      ready: /"url":"(http:\/\/[^"]+)".*countersign serving/,
      timeoutMs: 120_000,
    });
    url = /"url":"(http:\/\/[^"]+)".*countersign serving/.exec(server.output())![1]!;
    interactions =
      door === "http" ? httpInteractions(new SlackRequests({ baseUrl: url, signingSecret: SIGNING_SECRET })) : socket.interactions(new SlackPayloads());
  }, 180_000);

  afterAll(async () => {
    expect(await server?.stop()).toBe(0);
    await socket.stop();
    await slack.stop();
    await target.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("posts a submitted plan for review and records an Approve click", async () => {
    if (door === "socket") await waitFor("a greeted Socket Mode connection", () => socket.connections.some((c) => c.greeted), 60_000);
    const added = await runCli(["agents", "add", "built-door-agent"], { cwd: dir, env: { COUNTERSIGN_DATA_DIR: path.join(dir, "data") } });
    expect(added.code, added.stderr).toBe(0);
    const key = lastLine(added.stdout);

    const submitted = await fetch(`${url}/v1/plans`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({
        title: "New email for Ana",
        actions: [{ kind: "http.json", target: "contacts", path: "/contacts/1", op: "merge", body: { email: "ana@new.example" } }],
      }),
    });
    expect(submitted.status).toBe(201);
    const plan = (await submitted.json()) as { id: string };

    const message = await waitFor("the review message", () => slack.messagesIn(REVIEW).find((m) => JSON.stringify(m.blocks ?? []).includes(plan.id)), 60_000);
    const approve = buttons(message).find((b) => b.action_id === "approve");
    expect(approve?.value).toContain(plan.id);

    const ack = await interactions.blockAction({ user: "U0ALICE", actionId: "approve", value: approve!.value!, channelId: REVIEW, messageTs: message.ts });
    expect(ack.acked).toBe(true);
    await waitFor(
      "the plan approved",
      async () => {
        const res = await fetch(`${url}/v1/plans/${plan.id}`, { headers: { authorization: `Bearer ${key}` } });
        const body = (await res.json()) as { status: string };
        return body.status === "approved" ? body : undefined;
      },
      60_000,
    );
  }, 180_000);
});

function buttons(message: SlackMessage): { action_id: string; value?: string }[] {
  return (message.blocks ?? []).flatMap((b) => ((b as { type: string }).type === "actions" ? ((b as { elements: unknown[] }).elements as never[]) : []));
}
