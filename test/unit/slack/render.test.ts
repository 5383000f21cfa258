import { describe, expect, it } from "vitest";
import type { Change } from "../../../src/plan/changes.ts";
import type { Outcome } from "../../../src/plan/outcome.ts";
import type { ActionPreview } from "../../../src/contract/agent-api.ts";
import { PLAN_STATUSES, type PlanStatus } from "../../../src/plan/status.ts";
import type { Block, PlanMessage, SlackMessage, ThreadEvent } from "../../../src/slack/plan-message.ts";
import { renderPlanMessage, renderThreadReply } from "../../../src/slack/render.ts";
import { PLAN_HASH, PLAN_ID, planMessage } from "../../support/plan-fixtures.ts";

// ----------------------------------------------------------------------------------- fixtures

const SHORT = "0123456789ab";
const APPROVERS = ["UALICE01", "UBOB0002", "UCAROL03"];

function action(overrides: Partial<ActionPreview> = {}): ActionPreview {
  return {
    target: "crm",
    path: "/contacts/42",
    op: "merge",
    before: { name: "Ada" },
    after: { name: "Ada L." },
    version: 'W/"41"',
    changes: [{ path: "/name", from: "Ada", to: "Ada L." }],
    ...overrides,
  };
}

// The shared plan, filled out: a reason, on someone's behalf, two of three approvers needed.
function plan(overrides: Partial<PlanMessage> = {}): PlanMessage {
  return planMessage({
    title: "Rename contact 42",
    reason: "The customer asked for their full name.",
    onBehalfOf: "UREQUEST1",
    actions: [action()],
    policy: { approvers: APPROVERS, requiredApprovals: 2 },
    ...overrides,
  });
}

function changes(count: number, value: (i: number) => string = (i) => `value ${i}`): Change[] {
  return Array.from({ length: count }, (_, i) => ({ path: `/field${i}`, from: value(i), to: `${value(i)} (new)` }));
}

function outcome(overrides: Partial<Outcome> = {}): Outcome {
  return {
    status: "applied",
    actions: [{ index: 0, target: "crm", path: "/contacts/42", status: "applied" }],
    ...overrides,
  };
}

const BIG = "x".repeat(100 * 1024);
const UNICODE = "👩‍👩‍👧‍👦🏳️‍🌈👍🏽 שָׁלוֹם مرحبا \u202Eevil\u202C e\u0301\u0308\u0323 Z\u0351\u0352\u0353\u0354\u0355 🇫🇷 \uD800";
const HOSTILE = "<!channel> <!here> <!everyone> <@U123> <#C123> <!subteam^S123> <https://evil|prod> *bold* _x_ ~x~ `code` ```block``` &amp;\n> quote";

// ------------------------------------------------------------------------- checking a message

interface TextObject {
  type: string;
  text: string;
}

/** Every text object in a message, wherever it sits. */
function textObjects(value: unknown, out: TextObject[] = []): TextObject[] {
  if (Array.isArray(value)) for (const v of value) textObjects(v, out);
  else if (typeof value === "object" && value !== null) {
    const o = value as Record<string, unknown>;
    if ((o.type === "plain_text" || o.type === "mrkdwn") && typeof o.text === "string") out.push(o as unknown as TextObject);
    else for (const v of Object.values(o)) textObjects(v, out);
  }
  return out;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Slack's Block Kit limits, written out here rather than imported so the renderer cannot move them. */
function limitProblems(message: SlackMessage): string[] {
  const problems: string[] = [];
  const check = (ok: boolean, what: string) => void (ok || problems.push(what));
  const text = (t: unknown, max: number, at: string, plainOnly = false) => {
    const o = t as TextObject | undefined;
    if (!o || typeof o.text !== "string") return void problems.push(`${at}: missing text object`);
    check(o.type === "plain_text" || (!plainOnly && o.type === "mrkdwn"), `${at}: type ${o.type}`);
    check(o.text.length >= 1, `${at}: empty`);
    check(o.text.length <= max, `${at}: ${o.text.length} > ${max}`);
  };
  const button = (b: Record<string, unknown>, at: string) => {
    check(b.type === "button", `${at}: not a button`);
    text(b.text, 75, `${at}/text`, true);
    if (b.value !== undefined) check(String(b.value).length <= 2000, `${at}/value > 2000`);
    if (b.url !== undefined) check(String(b.url).length <= 3000, `${at}/url > 3000`);
    check(typeof b.action_id === "string" && b.action_id.length <= 255, `${at}/action_id`);
    if (b.style !== undefined) check(b.style === "primary" || b.style === "danger", `${at}/style`);
    const confirm = b.confirm as Record<string, unknown> | undefined;
    if (confirm) {
      text(confirm.title, 100, `${at}/confirm/title`, true);
      text(confirm.text, 300, `${at}/confirm/text`);
      text(confirm.confirm, 30, `${at}/confirm/confirm`, true);
      text(confirm.deny, 30, `${at}/confirm/deny`, true);
    }
  };

  check(message.text.length >= 1 && message.text.length <= 3000, `text: ${message.text.length} characters`);
  check(message.blocks.length <= 50, `${message.blocks.length} blocks > 50`);
  // Slack's msg_blocks_too_long: undocumented, seen at 12–13k characters of blocks. We promise 10,000.
  const size = JSON.stringify(message.blocks).length;
  check(size <= 10_000, `blocks JSON: ${size} > 10000`);
  message.blocks.forEach((block, i) => {
    const at = `/blocks/${i}`;
    if (block.block_id !== undefined) check(String(block.block_id).length <= 255, `${at}/block_id`);
    switch (block.type) {
      case "header":
        text(block.text, 150, `${at}/text`, true);
        break;
      case "section": {
        check(block.text !== undefined || block.fields !== undefined, `${at}: neither text nor fields`);
        if (block.text !== undefined) text(block.text, 3000, `${at}/text`);
        const fields = (block.fields ?? []) as unknown[];
        check(fields.length <= 10, `${at}: ${fields.length} fields > 10`);
        fields.forEach((f, j) => {
          text(f, 2000, `${at}/fields/${j}`);
        });
        if (block.accessory !== undefined) button(block.accessory as Record<string, unknown>, `${at}/accessory`);
        break;
      }
      case "context": {
        const elements = block.elements as unknown[];
        check(elements.length >= 1 && elements.length <= 10, `${at}: ${elements.length} elements`);
        elements.forEach((e, j) => {
          text(e, 3000, `${at}/elements/${j}`);
        });
        break;
      }
      case "actions": {
        const elements = block.elements as Record<string, unknown>[];
        check(elements.length >= 1 && elements.length <= 25, `${at}: ${elements.length} elements`);
        check(new Set(elements.map((e) => e.action_id)).size === elements.length, `${at}: duplicate action_id`);
        elements.forEach((e, j) => {
          button(e, `${at}/elements/${j}`);
        });
        break;
      }
      case "divider":
        break;
      default:
        problems.push(`${at}: unexpected block type ${String(block.type)}`);
    }
  });
  for (const o of textObjects(message.blocks)) check(!LONE_SURROGATE.test(o.text), `lone surrogate in ${JSON.stringify(o.text.slice(0, 40))}`);
  check(!LONE_SURROGATE.test(message.text), "lone surrogate in text");
  return problems;
}

function checkLimits(message: SlackMessage): void {
  expect(limitProblems(message)).toEqual([]);
}

/** Our own tokens: mentions of the people the policy names, and localised dates. */
function withoutOurTokens(text: string, ourMentions: string[]): string {
  let out = text.replace(/<!date\^\d+\^\{date_short_pretty\} at \{time\}\|[0-9TZ:.-]+>/g, "");
  for (const id of ourMentions) out = out.replaceAll(`<@${id}>`, "");
  return out;
}

/**
 * Agent input can make no token: mrkdwn keeps no `<` but ours, and plain_text (which Slack does
 * not parse) has each `<` defused. Formatting outside code spans is neutralised, and every code
 * span is closed by us, not by an agent's backtick.
 */
function expectNoAgentMarkup(message: SlackMessage, ourMentions: string[]): void {
  const all = withoutOurTokens(JSON.stringify(message), ourMentions);
  expect(all).not.toMatch(/<[!@#]|<https?:|<mailto:/i);
  for (const o of [...textObjects(message.blocks), { type: "mrkdwn", text: message.text }]) {
    if (o.type !== "mrkdwn") continue;
    const text = withoutOurTokens(o.text, ourMentions);
    expect(text).not.toContain("<");
    expect((text.match(/`/g) ?? []).length % 2, `unbalanced backticks in ${text}`).toBe(0);
    const outsideCode = text.replace(/`[^`]*`/g, "");
    for (const formatted of ["*bold*", "_x_", "~x~", "```"]) expect(outsideCode).not.toContain(formatted);
    expect(outsideCode).not.toMatch(/^(&gt;|>)/m);
  }
}

function allText(message: SlackMessage): string {
  return [message.text, ...textObjects(message.blocks).map((o) => o.text)].join("\n");
}

function buttons(message: SlackMessage): Record<string, unknown>[] {
  return message.blocks.filter((b) => b.type === "actions").flatMap((b) => b.elements as Record<string, unknown>[]);
}

function sections(message: SlackMessage): string[] {
  return message.blocks.filter((b) => b.type === "section").map((b) => (b.text as TextObject).text);
}

const MORE_CHANGES = /… \d+ more changes? — see full plan/;

// ---------------------------------------------------------------------------------- the preview

describe("renderPlanMessage: what the preview shows", () => {
  const message = renderPlanMessage(plan());
  const text = allText(message);

  it.each<[string, string]>([
    ["the title, as the header", "Rename contact 42"],
    ["the agent", "Agent: crm-bot"],
    ["on whose behalf, as a mention", "on behalf of <@UREQUEST1>"],
    ["the environment", "Environment: production"],
    ["the reason", "Reason: The customer asked for their full name."],
    ["the quorum", "needs 2 of: <@UALICE01> <@UBOB0002> <@UCAROL03>"],
    ["the action's op, target and path, code-formatted", "`merge` on `crm` `/contacts/42`"],
    ["the version read", 'Version read: `W/"41"`'],
    ["each change as before → after", '• `/name`: `"Ada"` → `"Ada L."`'],
    ["the expiry in each viewer's time", "Expires <!date^1777636800^{date_short_pretty} at {time}|2026-05-01T12:00:00Z>"],
    ["the short hash", `Plan \`${SHORT}\``],
  ])("%s", (_name, expected) => {
    expect(text).toContain(expected);
  });

  it("puts the title in a plain_text header", () => {
    expect(message.blocks[0]).toEqual({ type: "header", text: { type: "plain_text", text: "Rename contact 42", emoji: false } });
  });

  it("has a short, escaped notification text", () => {
    expect(message.text).toBe("Plan awaiting approval: Rename contact 42");
  });

  it("marks every mrkdwn object verbatim, so Slack auto-links and auto-mentions nothing", () => {
    for (const o of textObjects(message.blocks).filter((o) => o.type === "mrkdwn")) expect(o).toMatchObject({ verbatim: true });
  });

  it("is within limits", () => checkLimits(message));

  it.each<[string, Partial<ActionPreview>, string]>([
    ["an added field", { changes: [{ path: "/b", to: true }] }, "• `/b`: _absent_ → `true`"],
    ["a removed field", { changes: [{ path: "/b", from: null }] }, "• `/b`: `null` → _absent_"],
    ["a created resource", { op: "create", version: null, changes: [{ path: "", to: { a: 1 } }] }, '• _whole resource_: _absent_ → `{"a":1}`'],
    ["a resource that did not exist", { version: null }, "Version read: _none — the resource did not exist_"],
    ["no field changes", { changes: [] }, "_No field changes._"],
    ["an object value", { changes: [{ path: "/tags", from: ["a"], to: ["a", "b"] }] }, '• `/tags`: `["a"]` → `["a","b"]`'],
  ])("shows %s", (_name, overrides, expected) => {
    const m = renderPlanMessage(plan({ actions: [action(overrides)] }));
    expect(allText(m)).toContain(expected);
    checkLimits(m);
  });

  it("shows an on-behalf-of that is not a user id as text, not a mention", () => {
    const m = renderPlanMessage(plan({ onBehalfOf: "<!channel>" }));
    expect(allText(m)).toContain("on behalf of &lt;!channel&gt;");
  });

  it("leaves out what the plan does not have", () => {
    const m = renderPlanMessage(plan({ reason: undefined, onBehalfOf: undefined }));
    expect(allText(m)).not.toContain("Reason:");
    expect(allText(m)).not.toContain("on behalf of");
  });
});

describe("renderPlanMessage: decision buttons", () => {
  const value = JSON.stringify({ planId: PLAN_ID, hash: PLAN_HASH });

  it("offers Approve (with a confirm dialog) and Reject while pending, and always the full plan", () => {
    const message = renderPlanMessage(plan({ actions: [action(), action({ target: "billing", path: "/invoices/7" })] }));
    const last = message.blocks.at(-1)!;
    expect(last.type).toBe("actions");
    const [approve, reject, view] = last.elements as Record<string, unknown>[];
    expect(approve).toEqual({
      type: "button",
      action_id: "approve",
      style: "primary",
      text: { type: "plain_text", text: "Approve", emoji: false },
      value,
      confirm: {
        title: { type: "plain_text", text: "Approve this plan?", emoji: false },
        text: {
          type: "plain_text",
          text: `Approve plan ${SHORT}? 2 actions on crm, billing. Your approval binds to exactly this version.`,
          emoji: false,
        },
        confirm: { type: "plain_text", text: "Approve", emoji: false },
        deny: { type: "plain_text", text: "Cancel", emoji: false },
      },
    });
    expect(reject).toEqual({ type: "button", action_id: "reject", style: "danger", text: { type: "plain_text", text: "Reject", emoji: false }, value });
    expect(view).toEqual({
      type: "button",
      action_id: "view_full_plan",
      text: { type: "plain_text", text: "View full plan", emoji: false },
      url: `https://countersign.example/plans/${PLAN_ID}`,
    });
  });

  it("binds the button value to the full hash, however much of the plan is shown", () => {
    const message = renderPlanMessage(plan({ actions: Array.from({ length: 20 }, () => action({ changes: changes(25) })) }));
    for (const b of buttons(message).filter((b) => b.action_id !== "view_full_plan"))
      expect(JSON.parse(String(b.value))).toEqual({ planId: PLAN_ID, hash: PLAN_HASH });
  });

  it("keeps the short hash in the confirm dialog when the target list is long", () => {
    const many = Array.from({ length: 20 }, (_, i) => action({ target: `target-with-a-long-name-${i}-${"t".repeat(70)}` }));
    const message = renderPlanMessage(plan({ actions: many }));
    const confirm = (buttons(message)[0]!.confirm as { text: TextObject }).text.text;
    expect(confirm.startsWith(`Approve plan ${SHORT}?`)).toBe(true);
    expect(confirm.length).toBeLessThanOrEqual(300);
    checkLimits(message);
  });

  it.each(PLAN_STATUSES.filter((s) => s !== "pending"))("shows no Approve or Reject once %s (only an approved plan offers Revoke)", (status) => {
    const message = renderPlanMessage(plan({ status }));
    expect(buttons(message).map((b) => b.action_id)).toEqual(status === "approved" ? ["revoke", "view_full_plan"] : ["view_full_plan"]);
    expect(JSON.stringify(message)).not.toMatch(/"action_id":"(approve|reject)"/);
  });

  it("Revoke on an approved plan carries the plan and its exact hash, like the decision buttons", () => {
    const message = renderPlanMessage(plan({ status: "approved" }));
    const revoke = buttons(message).find((b) => b.action_id === "revoke")!;
    expect(revoke).toMatchObject({ style: "danger", value: JSON.stringify({ planId: PLAN_ID, hash: PLAN_HASH }) });
    checkLimits(message);
  });

  it("a revoked plan says who revoked it and why on one escaped line, and its thread reply too", () => {
    const message = renderPlanMessage(plan({ status: "revoked", revocation: { userId: "UBOB0002", reason: "wrong <!channel>\n✅ *Approved* by me" } }));
    const text = JSON.stringify(message.blocks);
    expect(text).toContain("⛔ *Revoked* by <@UBOB0002>: wrong &lt;!channel&gt;");
    expect(text).not.toContain("\\n✅");
    const reply = renderThreadReply({ type: "plan.revoked", userId: "UBOB0002", reason: "wrong <!channel>" });
    expect(reply.text).toBe("⛔ Revoked by <@UBOB0002>: wrong &lt;!channel&gt;");
    checkLimits(message);
  });
});

describe("renderPlanMessage: the status line", () => {
  const approvals = [
    { userId: "UALICE01", via: "slack" as const, at: "2026-05-01T10:00:00Z" },
    { userId: "UBOB0002", via: "web" as const, at: "2026-05-01T10:05:00Z" },
  ];

  it.each<[string, Partial<PlanMessage>, string[]]>([
    ["pending, nobody yet", {}, ["*Pending* — needs 2 of: <@UALICE01> <@UBOB0002> <@UCAROL03>"]],
    ["pending, one approval", { approvals: approvals.slice(0, 1) }, ["*Pending*", "Approved so far (1 of 2): <@UALICE01>"]],
    ["approved", { status: "approved", approvals }, ["*Approved* by <@UALICE01> <@UBOB0002> — handed to the executor"]],
    ["rejected", { status: "rejected", rejection: { userId: "UCAROL03", reason: "Wrong contact" } }, ["*Rejected* by <@UCAROL03>: Wrong contact"]],
    ["expired", { status: "expired" }, ["*Expired* — nobody decided in time", "Expired <!date^"]],
    [
      "expired with a reason",
      { status: "expired", outcome: outcome({ status: "expired", reason: "grant expired before an executor claimed it" }) },
      ["*Expired* — grant expired before an executor claimed it"],
    ],
    ["cancelled", { status: "cancelled" }, ["*Cancelled* by the agent"]],
    ["executing", { status: "executing", approvals }, ["*Executing…* — approved by <@UALICE01> <@UBOB0002>"]],
    ["applied", { status: "applied", approvals, outcome: outcome() }, ["*Applied* — approved by"]],
    ["applied, reconciled", { status: "applied", outcome: outcome({ reconciled: true }) }, ["the target already held these changes"]],
    [
      "applied, a write not as previewed",
      {
        status: "applied",
        approvals,
        outcome: outcome({
          actions: [{ index: 0, target: "crm", path: "/c", status: "applied", verified: false, driftAfterApply: [{ path: "/name", expected: "Ada" }] }],
        }),
      },
      ["⚠️ *Applied, not as previewed* — 1 write did not land as approved; see the thread — approved by"],
    ],
    ["failed", { status: "failed", outcome: outcome({ status: "failed", reason: "target answered 500" }) }, ["*Failed* — target answered 500"]],
    ["failed, partly applied", { status: "failed", outcome: outcome({ status: "failed", partial: true }) }, ["*Failed*", "Partly applied"]],
    [
      "failed, naming a key id: shown exactly, in a code span",
      { status: "failed", outcome: outcome({ status: "failed", reason: "grant rejected: grant signed with unknown key `ab_cd_ef-Gh`" }) },
      ["*Failed* — grant rejected: grant signed with unknown key `ab_cd_ef-Gh`"],
    ],
    ["stale", { status: "stale", outcome: outcome({ status: "stale" }) }, ["*Stale* — target changed, resubmit"]],
  ])("%s", (_name, overrides, expected) => {
    const message = renderPlanMessage(plan(overrides));
    const status = sections(message).find((s) => /^\S+ \*(Pending|Approved|Rejected|Expired|Cancelled|Executing|Applied|Failed|Stale)/.test(s));
    expect(status).toBeDefined();
    for (const e of expected) expect(allText(message)).toContain(e);
    checkLimits(message);
  });

  it("says which plan state the notification is about", () => {
    expect(renderPlanMessage(plan({ status: "applied" })).text).toBe("Plan applied: Rename contact 42");
  });

  it("caps a long approver list", () => {
    const many = Array.from({ length: 200 }, (_, i) => `UAPPROVER${i}`);
    const message = renderPlanMessage(plan({ policy: { approvers: many, requiredApprovals: 3 } }));
    expect(allText(message)).toContain("and 185 more");
    checkLimits(message);
  });
});

describe("renderPlanMessage: hostile agent text (scenario 23)", () => {
  const hostileAction = (): ActionPreview =>
    action({
      target: HOSTILE,
      path: `/a\`b/${HOSTILE}`,
      version: HOSTILE,
      changes: [
        { path: `/${HOSTILE}`, from: HOSTILE, to: { [HOSTILE]: HOSTILE } },
        { path: "/x", from: "`", to: "```" },
      ],
    });
  const hostile = plan({
    title: HOSTILE,
    reason: HOSTILE,
    agent: HOSTILE,
    environment: HOSTILE,
    onBehalfOf: HOSTILE,
    actions: [hostileAction(), hostileAction()],
  });

  it.each<[string, PlanMessage, string[]]>([
    ["pending", hostile, APPROVERS],
    ["rejected with a hostile reason", { ...hostile, status: "rejected", rejection: { userId: "UCAROL03", reason: HOSTILE } }, ["UCAROL03"]],
    ["rejected by a non-id", { ...hostile, status: "rejected", rejection: { userId: HOSTILE, reason: HOSTILE } }, []],
    ["failed with a hostile reason", { ...hostile, status: "failed", outcome: outcome({ status: "failed", reason: HOSTILE }) }, []],
    ["expired with a hostile reason", { ...hostile, status: "expired", outcome: outcome({ status: "expired", reason: HOSTILE }) }, []],
    [
      "hostile approvers",
      {
        ...hostile,
        policy: { approvers: [HOSTILE, "UALICE01"], requiredApprovals: 1 },
        approvals: [{ userId: HOSTILE, via: "web", at: "2026-05-01T10:00:00Z" }],
      },
      ["UALICE01"],
    ],
  ])("%s: no mention, link or formatting from the agent", (_name, m, ours) => {
    const message = renderPlanMessage(m);
    expectNoAgentMarkup(message, ours);
    checkLimits(message);
  });

  it("shows the title literally in plain_text, with each < defused by an invisible word joiner", () => {
    const header = renderPlanMessage(hostile).blocks[0]!.text as TextObject;
    expect(header.type).toBe("plain_text");
    expect(header.text).toContain("*bold* _x_ ~x~ `code`");
    expect(header.text).toContain("<\u2060!channel>");
    expect(header.text.replaceAll("\u2060", "")).toBe(HOSTILE.replace(/\n/g, " "));
  });

  it("shows the reason literally in plain_text", () => {
    const reason = renderPlanMessage(hostile).blocks.find((b) => (b.text as TextObject | undefined)?.text.startsWith("Reason:"));
    expect((reason!.text as TextObject).type).toBe("plain_text");
    expect((reason!.text as TextObject).text.replaceAll("\u2060", "")).toBe(`Reason: ${HOSTILE}`);
  });

  it("shows &amp; from the agent as &amp;, not as &", () => {
    const message = renderPlanMessage(hostile);
    expect(message.text).toContain("&amp;amp;");
    expect(sections(message).join("\n")).toContain("&amp;amp;");
  });

  it("neutralises a backtick in a path so it cannot end the code span", () => {
    expect(allText(renderPlanMessage(hostile))).toContain("`/a\u02CBb/");
  });

  it("keeps *, _ and ~ exact inside code spans", () => {
    expect(allText(renderPlanMessage(hostile))).toContain("*bold* _x_ ~x~ \u02CBcode\u02CB");
  });

  it("the notification text is escaped and neutralised too", () => {
    const text = renderPlanMessage(hostile).text;
    expect(text.startsWith("Plan awaiting approval: &lt;!channel&gt; &lt;!here&gt;")).toBe(true);
    expect(text).toContain("\u2217bold\u2217 \u02CDx\u02CD \u223Cx\u223C");
  });
});

describe("renderPlanMessage: any plan fits (scenario 24)", () => {
  it.each<[string, PlanMessage, RegExp]>([
    [
      "20 actions × 25 changes",
      plan({ actions: Array.from({ length: 20 }, (_, i) => action({ path: `/contacts/${i}`, changes: changes(25) })) }),
      MORE_CHANGES,
    ],
    ["500 changed fields", plan({ actions: [action({ changes: changes(500) })] }), /… 485 more changes — see full plan/],
    [
      "500 changed fields over 20 actions",
      plan({ actions: Array.from({ length: 20 }, () => action({ changes: changes(25) })) }),
      /… 23 more changes — see full plan/,
    ],
    [
      "100 KB strings everywhere",
      plan({
        title: BIG,
        reason: BIG,
        agent: BIG,
        environment: BIG,
        onBehalfOf: `U${"A".repeat(BIG.length)}`,
        reviewUrl: `https://countersign.example/plans/${PLAN_ID}`,
        policy: { approvers: [`U${"B".repeat(BIG.length)}`], requiredApprovals: 1 },
        actions: Array.from({ length: 20 }, () =>
          action({ target: BIG, path: `/${BIG}`, version: BIG, changes: changes(30, () => BIG).map((c) => ({ ...c, path: `/${BIG}` })) }),
        ),
      }),
      MORE_CHANGES,
    ],
    [
      "100 KB of & (5× longer once escaped)",
      plan({
        title: "&".repeat(BIG.length),
        reason: "<".repeat(BIG.length),
        actions: [action({ path: "&".repeat(BIG.length), changes: changes(40, () => "&".repeat(BIG.length)) })],
      }),
      MORE_CHANGES,
    ],
    [
      "emoji, ZWJ sequences, RTL and combining marks",
      plan({
        title: UNICODE.repeat(50),
        reason: UNICODE.repeat(500),
        agent: UNICODE.repeat(20),
        actions: Array.from({ length: 20 }, () =>
          action({ target: UNICODE, path: `/${UNICODE.repeat(40)}`, version: UNICODE, changes: changes(25, () => UNICODE.repeat(30)) }),
        ),
      }),
      MORE_CHANGES,
    ],
    [
      "a letter under 100,000 combining marks",
      plan({ title: `Z${"\u0301".repeat(100_000)}`, actions: [action({ changes: changes(20, () => `Z${"\u0301".repeat(100_000)}`) })] }),
      MORE_CHANGES,
    ],
    [
      "more actions than the schema allows",
      plan({ actions: Array.from({ length: 60 }, () => action({ changes: changes(25) })) }),
      /… 40 more actions — see full plan/,
    ],
  ])("%s", (_name, m, marker) => {
    const message = renderPlanMessage(m);
    checkLimits(message);
    expect(allText(message)).toMatch(marker);
    expect(message.blocks.at(-1)!.type).toBe("actions");
    expect(buttons(message).map((b) => b.action_id)).toEqual(["approve", "reject", "view_full_plan"]);
  });

  it("shows every action of a 20-action plan, each in its own section", () => {
    const message = renderPlanMessage(plan({ actions: Array.from({ length: 20 }, (_, i) => action({ path: `/contacts/${i}`, changes: changes(25) })) }));
    for (let i = 0; i < 20; i++) expect(allText(message)).toContain(`*${i + 1}/20* \`merge\` on \`crm\` \`/contacts/${i}\``);
  });

  it("renders a 100 KB plan quickly", () => {
    const m = plan({ title: BIG, reason: BIG, actions: Array.from({ length: 20 }, () => action({ path: `/${BIG}`, changes: changes(25, () => BIG) })) });
    const started = performance.now();
    renderPlanMessage(m);
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it("leaves out a review URL too long to be a button link rather than cutting it", () => {
    const message = renderPlanMessage(plan({ reviewUrl: `https://countersign.example/${"p".repeat(4000)}` }));
    expect(buttons(message).find((b) => b.action_id === "view_full_plan")).not.toHaveProperty("url");
    checkLimits(message);
  });

  it("refuses to cut a button value, which would bind nothing", () => {
    expect(() => renderPlanMessage(plan({ planId: "p".repeat(3000) }))).toThrow(RangeError);
  });
});

// ------------------------------------------------------------------------------ thread replies

describe("renderThreadReply", () => {
  const applied = outcome({
    actions: [
      { index: 0, target: "crm", path: "/contacts/42", status: "applied" },
      { index: 1, target: "crm", path: "/contacts/43", status: "applied", reconciled: true },
    ],
  });
  const twoActions = [action(), action({ path: "/contacts/43", changes: [{ path: "/email", from: "a@x", to: "b@x" }] })];
  const drifted = outcome({
    actions: [
      {
        index: 0,
        target: "crm",
        path: "/contacts/42",
        status: "applied",
        verified: false,
        driftAfterApply: [
          { path: "/name", expected: "Ada L." },
          { path: "/nick", expected: "Ada", actual: "ADA" },
        ],
      },
      {
        index: 1,
        target: "crm",
        path: "/contacts/43",
        status: "applied",
        verified: null,
        detail: "could not re-read after the write: target 'crm' answered HTTP 503",
      },
    ],
  });

  it.each<[string, ThreadEvent, string[]]>([
    ["an approval", { type: "decision.approve", userId: "UALICE01", approvals: 1, requiredApprovals: 2 }, ["Approval 1 of 2 by <@UALICE01>"]],
    ["the approval", { type: "plan.approved", approvers: ["UALICE01", "UBOB0002"] }, ["Approved by <@UALICE01> <@UBOB0002> — handed to the executor"]],
    ["a rejection", { type: "plan.rejected", userId: "UCAROL03", reason: "Wrong contact" }, ["Rejected by <@UCAROL03>: Wrong contact"]],
    ["expiry", { type: "plan.expired" }, ["Expired — nobody decided in time"]],
    ["expiry with a reason", { type: "plan.expired", reason: "grant expired" }, ["Expired — grant expired"]],
    ["a cancellation", { type: "plan.cancelled", agent: "crm-bot" }, ["Cancelled by the agent (crm-bot)"]],
    ["execution", { type: "plan.executing" }, ["Executing…"]],
    ["a takeover", { type: "plan.reclaimed", claim: 3 }, ["Taken over by another executor (claim 3)"]],
    [
      "no executor connected",
      { type: "plan.no_executor", lastSeenAt: "2026-12-02T12:00:00.000Z", grantExpiresAt: "2026-12-02T12:10:00.000Z" },
      [
        "⏸️ Waiting for an executor: no executor is connected (none has asked for work since <!date^1796212800^{date_short_pretty} at {time}|2026-12-02T12:00:00Z>), so nobody applies this plan until one does; the approval lapses <!date^1796213400^{date_short_pretty} at {time}|2026-12-02T12:10:00Z>",
      ],
    ],
    [
      "no executor ever connected",
      { type: "plan.no_executor", lastSeenAt: null, grantExpiresAt: undefined },
      ["⏸️ Waiting for an executor: no executor is connected (none has asked for work yet), so nobody applies this plan until one does"],
    ],
    ["an approval with nobody named", { type: "plan.approved", approvers: [] }, ["Approved — handed to the executor"]],
    [
      "an application",
      { type: "plan.applied", outcome: applied, actions: twoActions },
      [
        "Applied ✅ — 1 action written",
        "`/contacts/42` — applied",
        '• `/name`: `"Ada"` → `"Ada L."`',
        "`/contacts/43` — already held this change, nothing written",
      ],
    ],
    [
      "a reconciled application",
      { type: "plan.applied", outcome: outcome({ reconciled: true }), actions: [action()] },
      ["Applied ✅ — the target already held these changes; nothing was written"],
    ],
    [
      "an application whose re-read differs from the preview (verify after apply)",
      { type: "plan.applied", outcome: drifted, actions: twoActions },
      [
        "Applied ⚠️ — 2 actions written, but 1 write did not land as approved: the target, re-read after the write, differs from what was approved",
        '⚠️ *1.* `crm` `/contacts/42` — re-read after the write (approved → target has):\n• `/name`: `"Ada L."` → _absent_\n• `/nick`: `"Ada"` → `"ADA"`',
        "`/contacts/42` — applied, ⚠️ not as previewed",
        "`/contacts/43` — applied, not re-checked (the target could not be re-read after the write)",
      ],
    ],
    [
      "a failure",
      {
        type: "plan.failed",
        outcome: outcome({
          status: "failed",
          reason: "target answered 500",
          partial: true,
          actions: [
            { index: 0, target: "crm", path: "/contacts/42", status: "applied" },
            { index: 1, target: "crm", path: "/contacts/43", status: "failed", detail: "HTTP 500" },
          ],
        }),
      },
      ["Failed ❌ — target answered 500", "Partly applied", "*2.* `crm` `/contacts/43` — failed: HTTP 500"],
    ],
    [
      "a failure without a reason",
      {
        type: "plan.failed",
        outcome: outcome({ status: "failed", actions: [{ index: 0, target: "crm", path: "/c", status: "failed", detail: "connection refused" }] }),
      },
      ["Failed ❌ — connection refused"],
    ],
    [
      "a failure naming a key id",
      {
        type: "plan.failed",
        outcome: outcome({ status: "failed", reason: "grant rejected: grant signed with unknown key `x_y_z`", actions: [] }),
      },
      ["Failed ❌ — grant rejected: grant signed with unknown key `x_y_z`"],
    ],
    [
      "a stale target",
      {
        type: "plan.stale",
        outcome: outcome({
          status: "stale",
          actions: [
            {
              index: 0,
              target: "crm",
              path: "/contacts/42",
              status: "stale",
              expected: 'W/"41"',
              now: 'W/"42"',
              changedSincePreview: [{ path: "/name", from: "Ada", to: "Ada Lovelace" }],
            },
          ],
        }),
      },
      ['Stale — `crm` `/contacts/42` changed since the preview: expected `W/"41"`, now `W/"42"`; resubmit the plan', '• `/name`: `"Ada"` → `"Ada Lovelace"`'],
    ],
    [
      "a stale target that disappeared",
      {
        type: "plan.stale",
        outcome: outcome({
          status: "stale",
          actions: [
            { index: 0, target: "crm", path: "/c", status: "stale", expected: 'W/"1"', now: null },
            { index: 1, target: "crm", path: "/d", status: "stale" },
          ],
        }),
      },
      ['expected `W/"1"`, now _absent_', "(and 1 more)", "expected _unknown_, now _unknown_"],
    ],
    [
      "a stale outcome naming no action",
      { type: "plan.stale", outcome: outcome({ status: "stale", actions: [] }) },
      ["Stale — the target changed since the preview; resubmit the plan"],
    ],
  ])("%s", (_name, event, expected) => {
    const message = renderThreadReply(event);
    for (const e of expected) expect(allText(message)).toContain(e);
    expect(message.text).toContain(expected[0]!);
    checkLimits(message);
  });

  it.each<[string, ThreadEvent]>([
    ["rejection", { type: "plan.rejected", userId: HOSTILE, reason: HOSTILE }],
    ["expiry", { type: "plan.expired", reason: HOSTILE }],
    ["cancellation", { type: "plan.cancelled", agent: HOSTILE }],
    ["approval by a non-id", { type: "decision.approve", userId: HOSTILE, approvals: 1, requiredApprovals: 2 }],
    ["approvers that are not ids", { type: "plan.approved", approvers: [HOSTILE, HOSTILE] }],
    [
      "application",
      {
        type: "plan.applied",
        outcome: outcome({ actions: [{ index: 0, target: HOSTILE, path: HOSTILE, status: "applied", detail: HOSTILE }] }),
        actions: [action({ target: HOSTILE, path: HOSTILE, changes: [{ path: HOSTILE, from: HOSTILE, to: HOSTILE }] })],
      },
    ],
    [
      "failure",
      {
        type: "plan.failed",
        outcome: outcome({ status: "failed", reason: HOSTILE, actions: [{ index: 0, target: HOSTILE, path: HOSTILE, status: "failed", detail: HOSTILE }] }),
      },
    ],
    [
      "stale",
      {
        type: "plan.stale",
        outcome: outcome({
          status: "stale",
          actions: [
            {
              index: 0,
              target: HOSTILE,
              path: HOSTILE,
              status: "stale",
              expected: HOSTILE,
              now: HOSTILE,
              changedSincePreview: [{ path: HOSTILE, from: HOSTILE, to: HOSTILE }],
            },
          ],
        }),
      },
    ],
    [
      "drift after apply",
      {
        type: "plan.applied",
        outcome: outcome({
          actions: [
            {
              index: 0,
              target: HOSTILE,
              path: HOSTILE,
              status: "applied",
              verified: false,
              driftAfterApply: [{ path: HOSTILE, expected: HOSTILE, actual: HOSTILE }],
            },
          ],
        }),
        actions: [action({ target: HOSTILE, path: HOSTILE })],
      },
    ],
  ])("hostile %s: no mention, link or formatting from input", (_name, event) => {
    const message = renderThreadReply(event);
    expectNoAgentMarkup(message, []);
    checkLimits(message);
  });

  it("says a single stale action once", () => {
    const message = renderThreadReply({
      type: "plan.stale",
      outcome: outcome({ status: "stale", actions: [{ index: 0, target: "crm", path: "/c", status: "stale", expected: "1", now: "2" }] }),
    });
    expect(message.blocks).toHaveLength(1);
  });

  it("keeps reviewer and executor text on one line, so it cannot forge a line of ours", () => {
    const message = renderThreadReply({ type: "plan.rejected", userId: "UCAROL03", reason: "no\n✅ Approved by <@UCEO>" });
    expect(message.text).toBe("🚫 Rejected by <@UCAROL03>: no ✅ Approved by &lt;@UCEO&gt;");
  });

  it.each<[string, ThreadEvent, RegExp]>([
    [
      "applied: 20 actions × 25 changes of 100 KB",
      {
        type: "plan.applied",
        outcome: outcome({ actions: Array.from({ length: 20 }, (_, i) => ({ index: i, target: "crm", path: `/c/${i}`, status: "applied" as const })) }),
        actions: Array.from({ length: 20 }, () => action({ path: `/${BIG}`, changes: changes(25, () => BIG) })),
      },
      MORE_CHANGES,
    ],
    [
      "applied: 20 writes each with 200 fields of 100 KB that did not land",
      {
        type: "plan.applied",
        outcome: outcome({
          actions: Array.from({ length: 20 }, (_, i) => ({
            index: i,
            target: BIG,
            path: BIG,
            status: "applied" as const,
            verified: false,
            driftAfterApply: Array.from({ length: 200 }, () => ({ path: BIG, expected: BIG, actual: BIG })),
          })),
        }),
        actions: Array.from({ length: 20 }, () => action({ path: `/${BIG}`, changes: changes(25, () => BIG) })),
      },
      /20 writes did not land as approved/,
    ],
    [
      "applied: 60 actions",
      { type: "plan.applied", outcome: outcome(), actions: Array.from({ length: 60 }, () => action()) },
      /… 40 more actions — see full plan/,
    ],
    [
      "failed: 100 actions with 100 KB details",
      {
        type: "plan.failed",
        outcome: outcome({
          status: "failed",
          reason: BIG,
          actions: Array.from({ length: 100 }, (_, i) => ({ index: i, target: BIG, path: BIG, status: "failed" as const, detail: BIG })),
        }),
      },
      /… \d+ more — see full plan/,
    ],
    [
      "stale: 200 changes since the preview",
      {
        type: "plan.stale",
        outcome: outcome({
          status: "stale",
          actions: [
            { index: 0, target: "crm", path: "/c", status: "stale", expected: BIG, now: UNICODE.repeat(100), changedSincePreview: changes(200, () => BIG) },
          ],
        }),
      },
      /… 195 more changes — see full plan/,
    ],
    ["rejected: 100 KB of Unicode", { type: "plan.rejected", userId: "UCAROL03", reason: UNICODE.repeat(3000) }, /Rejected by <@UCAROL03>/],
  ])("%s fits", (_name, event, marker) => {
    const message = renderThreadReply(event);
    checkLimits(message);
    expect(allText(message)).toMatch(marker);
  });
});

describe("checkLimits itself", () => {
  it.each<[string, SlackMessage, RegExp]>([
    ["too many blocks", { text: "t", blocks: Array.from({ length: 51 }, () => ({ type: "divider" })) }, /51 blocks > 50/],
    ["a long header", { text: "t", blocks: [{ type: "header", text: { type: "plain_text", text: "h".repeat(151) } }] }, /151 > 150/],
    ["a mrkdwn header", { text: "t", blocks: [{ type: "header", text: { type: "mrkdwn", text: "h" } }] }, /type mrkdwn/],
    ["a long section", { text: "t", blocks: [{ type: "section", text: { type: "mrkdwn", text: "s".repeat(3001) } }] }, /3001 > 3000/],
    [
      "eleven fields",
      { text: "t", blocks: [{ type: "section", fields: Array.from({ length: 11 }, () => ({ type: "mrkdwn", text: "f" })) }] },
      /11 fields > 10/,
    ],
    ["a long field", { text: "t", blocks: [{ type: "section", fields: [{ type: "mrkdwn", text: "f".repeat(2001) }] }] }, /2001 > 2000/],
    [
      "eleven context elements",
      { text: "t", blocks: [{ type: "context", elements: Array.from({ length: 11 }, () => ({ type: "mrkdwn", text: "c" })) }] },
      /11 elements/,
    ],
    [
      "a long button",
      { text: "t", blocks: [{ type: "actions", elements: [{ type: "button", action_id: "a", text: { type: "plain_text", text: "b".repeat(76) } }] }] },
      /76 > 75/,
    ],
    [
      "a long value",
      {
        text: "t",
        blocks: [{ type: "actions", elements: [{ type: "button", action_id: "a", text: { type: "plain_text", text: "b" }, value: "v".repeat(2001) }] }],
      },
      /value > 2000/,
    ],
    ["a long text", { text: "t".repeat(3001), blocks: [] }, /text: 3001/],
    ["an empty text object", { text: "t", blocks: [{ type: "section", text: { type: "mrkdwn", text: "" } }] }, /empty/],
    ["a lone surrogate", { text: "t", blocks: [{ type: "section", text: { type: "mrkdwn", text: "a\uD800" } }] }, /lone surrogate/],
  ])("catches %s", (_name, message, problem) => {
    expect(limitProblems(message).join("\n")).toMatch(problem);
  });
});

// Keep the status list honest: a new status must get a status line and a test here.
const _exhaustive: Record<PlanStatus, true> = Object.fromEntries(PLAN_STATUSES.map((s) => [s, true])) as Record<PlanStatus, true>;
void _exhaustive;
void (null as unknown as Block);

describe("risk in the preview", () => {
  it("shows the level and the rule that set it, within limits", () => {
    const message = renderPlanMessage(plan({ risk: { level: "high", rule: "targets.crm.policy.riskByOp.delete" } }));
    checkLimits(message);
    expect(allText(message)).toContain("Risk: HIGH (targets.crm.policy.riskByOp.delete)");
    expect(allText(renderPlanMessage(plan()))).not.toContain("Risk:");
  });

  it("a reminder mentions who is still needed, groups included", () => {
    const reply = renderThreadReply({
      type: "plan.reminder",
      expiresAt: "2026-12-02T12:15:00.000Z",
      missing: ["U0BOB", "S0REVIEWERS"],
      approvals: 1,
      requiredApprovals: 2,
    });
    checkLimits(reply);
    expect(reply.text).toContain("1 of 2");
    expect(reply.text).toContain("<@U0BOB>");
    expect(reply.text).toContain("<!subteam^S0REVIEWERS>");
  });
});

describe("which rule set the approvers", () => {
  it("is named in the pending line", () => {
    const message = renderPlanMessage(plan({ status: "pending", policy: { approvers: ["U0ALICE"], requiredApprovals: 1, rule: "targets.crm.policy" } }));
    checkLimits(message);
    expect(allText(message)).toContain("targets.crm.policy");
  });
});
