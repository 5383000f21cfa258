import { describe, expect, it } from "vitest";
import { PLAN_STATUSES } from "../../../src/plan/status.ts";
import { likenessOf, type Likeness } from "../../../src/plan/alike.ts";
import {
  DIGEST_MAX_LINES,
  digestCapacity,
  previewsToDigest,
  renderDigest,
  renderDigestReply,
  type DigestLine,
  type WaitingPreview,
} from "../../../src/slack/digest.ts";
import { BLOCKS_JSON_BUDGET, SLACK_LIMITS, renderThreadReply } from "../../../src/slack/render.ts";
import { validateBlocks } from "../../support/slack-emulator.ts";

const NOW = Date.parse("2026-12-03T08:00:00Z");

const waiting = (n: number, opts: { waitedMs?: number; highRisk?: (i: number) => boolean } = {}): WaitingPreview[] =>
  Array.from({ length: n }, (_, i) => ({ planId: `p${i}`, submittedAt: NOW - (opts.waitedMs ?? 0), highRisk: opts.highRisk?.(i) ?? false }));

const decide = (w: WaitingPreview[], over: Partial<Parameters<typeof previewsToDigest>[0]> = {}) =>
  previewsToDigest({ now: NOW, nextPostInMs: 0, spacingMs: 1000, afterMs: 30_000, waiting: w, ...over });

describe("previewsToDigest: when the queue would show previews too late", () => {
  it("posts previews one by one while the last waiting one would still go out within afterSeconds", () => {
    // 31 waiting, 1 a second: the last goes out 30 s from now, exactly the limit.
    expect(decide(waiting(31))).toEqual([]);
  });

  it("digests every waiting plan once the last would be later than afterSeconds", () => {
    expect(decide(waiting(32))).toEqual(waiting(32).map((w) => w.planId));
  });

  it("counts the time a plan has waited already (a Retry-After hold, a busy lane) and the channel's booked slot", () => {
    // Submitted 28 s ago: the third goes out in 2 s, 30 s after submission.
    expect(decide(waiting(3, { waitedMs: 28_000 }))).toEqual([]);
    expect(decide(waiting(3, { waitedMs: 28_000 }), { nextPostInMs: 1500 })).toEqual(["p0", "p1", "p2"]);
    expect(decide(waiting(3, { waitedMs: 31_000 }))).toEqual(["p0", "p1", "p2"]);
    // A slot in the past is now, not earlier.
    expect(decide(waiting(31), { nextPostInMs: -5000 })).toEqual([]);
  });

  it("keeps high-risk plans out of the digest: they get their own preview", () => {
    const chosen = decide(waiting(40, { highRisk: (i) => i % 10 === 0 }));
    expect(chosen).toHaveLength(36);
    expect(chosen).not.toContain("p0");
    expect(chosen).not.toContain("p30");
    expect(chosen[0]).toBe("p1");
  });

  it("never makes a digest of one plan (the same post as its preview, showing less)", () => {
    expect(decide(waiting(40, { highRisk: (i) => i !== 7 }))).toEqual([]);
    expect(decide(waiting(1, { waitedMs: 60_000 }))).toEqual([]);
  });

  it("never digests when afterSeconds is 0", () => {
    expect(decide(waiting(500, { waitedMs: 600_000 }), { afterMs: 0 })).toEqual([]);
  });
});

const line = (i: number, over: Partial<DigestLine> = {}): DigestLine => ({
  planId: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
  title: `Update contact ${i}`,
  target: "crm",
  op: "merge",
  moreActions: 0,
  hash: `sha256:${String(i).padStart(4, "0")}${"ab".repeat(30)}`,
  expiresAt: "2026-12-03T08:15:00.000Z",
  status: "pending",
  reviewUrl: `https://countersign.example.com/plans/00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
  ...over,
});

const textOf = (blocks: unknown) => JSON.stringify(blocks);

/** The likeness of a merge of `field` on crm. */
const likeness = (field: string): Likeness =>
  likenessOf({
    agent: "crm-bot",
    actions: [
      {
        kind: "http.json",
        target: "crm",
        path: "/c/1",
        op: "merge",
        body: { [field]: 1 },
        precondition: { etag: '"1"' },
        beforeDigest: `sha256:${"a".repeat(64)}`,
        afterDigest: `sha256:${"a".repeat(64)}`,
      },
    ],
    policy: { approvers: [], requiredApprovals: 1, grantTtlSeconds: 600 },
  })!;

describe("renderDigest", () => {
  it("lists each plan with its status, title, target and op, short hash, expiry and a link to its page", () => {
    const m = renderDigest([line(1), line(2, { status: "approved", target: "billing", op: "delete", moreActions: 2 })]);
    const text = textOf(m.blocks);
    expect(m.text).toContain("2 plans");
    expect(text).toContain("⏳ pending · *Update contact 1* · `crm` `merge` · `0001abababab` · expires <!date^1796285700^");
    expect(text).toContain("<https://countersign.example.com/plans/00000000-0000-4000-8000-000000000001|open>");
    expect(text).toContain("✅ approved · *Update contact 2* · `billing` `delete` +2 more");
    expect(text).toContain("1 still waiting for a decision");
    // No buttons: approving happens where the whole plan is shown.
    expect(text).not.toContain('"actions"');
    expect(text).toContain("/countersign list");
    expect(validateBlocks(m.blocks as never)).toEqual([]);
  });

  it("offers 'Review N like plans' for two or more alike pending plans, one button per likeness, naming the first", () => {
    const email = likeness("email");
    const tier = likeness("tier");
    const lines = [
      line(1, { likeness: email }),
      line(2, { likeness: tier }),
      line(3, { likeness: email }),
      line(4, { likeness: email, status: "approved" }),
      line(5, { likeness: tier, status: "rejected" }),
      line(6),
    ];
    const { blocks } = renderDigest(lines);
    const actions = blocks.filter((b) => b.type === "actions");
    expect(actions).toEqual([
      {
        type: "actions",
        elements: [
          {
            type: "button",
            action_id: "batch_open_0",
            text: { type: "plain_text", text: "Review 2 like plans", emoji: false },
            value: JSON.stringify({ like: lines[0]!.planId }),
          },
        ],
      },
    ]);
    expect(validateBlocks(blocks as never)).toEqual([]);
    // Once they are decided, nothing is offered.
    expect(renderDigest(lines.map((l) => ({ ...l, status: "approved" as const }))).blocks.filter((b) => b.type === "actions")).toEqual([]);
  });

  it("shows plan-supplied strings literally: no mention, broadcast, link or formatting can fire", () => {
    const evil = line(3, { title: "<!channel> *bold* <https://evil.example|click> @here", target: "crm`<!here>", op: "merge\n<@U0ADMIN>" });
    const text = textOf(renderDigest([evil, line(4)]).blocks);
    expect(text).not.toContain("<!channel>");
    expect(text).not.toContain("<!here>");
    expect(text).not.toContain("<https://evil.example");
    expect(text).not.toContain("<@U0ADMIN>");
    expect(text).toContain("&lt;!channel&gt;");
    expect(text).not.toContain("\\n<@");
  });

  it("holds what fits Slack's limits measured with the widest status, so any later update still fits, alike plans' buttons included", () => {
    // Five likenesses: the most buttons a digest shows.
    const huge = Array.from({ length: 100 }, (_, i) =>
      line(i, {
        title: "Ω".repeat(500),
        target: "t".repeat(300),
        reviewUrl: `https://countersign.example.com/${"x".repeat(200)}/plans/${i}`,
        likeness: likeness(`f${i % 5}`),
      }),
    );
    const n = digestCapacity(huge);
    expect(n).toBeGreaterThanOrEqual(2);
    expect(n).toBeLessThan(100);
    for (const status of PLAN_STATUSES) {
      const { blocks } = renderDigest(huge.slice(0, n).map((l) => ({ ...l, status })));
      expect(blocks.length).toBeLessThanOrEqual(SLACK_LIMITS.blocks);
      expect(JSON.stringify(blocks).length).toBeLessThanOrEqual(BLOCKS_JSON_BUDGET);
      expect(validateBlocks(blocks as never)).toEqual([]);
    }
    expect(textOf(renderDigest(huge.slice(0, n)).blocks).match(/Review \d+ like plans/g)).toHaveLength(5);
    // One more would not have fitted.
    const over = renderDigest(huge.slice(0, n + 1).map((l) => ({ ...l, status: "executing" as const })));
    const buttons = JSON.stringify(renderDigest(huge.slice(0, n + 1)).blocks.find((b) => b.type === "actions")).length;
    expect(JSON.stringify(over.blocks).length + buttons).toBeGreaterThan(BLOCKS_JSON_BUDGET - 300 - 100);
  });

  it("holds the longest prefix that fits: the same count as trying one line more at a time, for lines of every size", () => {
    const fitsOneByOne = (lines: DigestLine[]) => {
      let fits = 0;
      for (let n = 1; n <= Math.min(lines.length, DIGEST_MAX_LINES); n++) {
        const { blocks } = renderDigest(lines.slice(0, n).map((l) => ({ ...l, status: "superseded" as const })));
        if (blocks.length > SLACK_LIMITS.blocks || JSON.stringify(blocks).length > BLOCKS_JSON_BUDGET - 300) break;
        fits = n;
      }
      return fits;
    };
    const counts = new Set<number>();
    for (const size of [0, 1, 40, 120, 250, 400, 700, 1200]) {
      for (const length of [0, 1, 2, 7, 40, 41, 90]) {
        const lines = Array.from({ length }, (_, i) => line(i, { title: "Ω".repeat(size), target: "t".repeat(Math.min(size, 300)) }));
        const n = digestCapacity(lines);
        expect(n, `${length} lines with ${size}-character titles`).toBe(fitsOneByOne(lines));
        counts.add(n);
      }
    }
    // The sizes reach every kind of answer: none, all of a short list, the cap, and a cut below it.
    expect(counts.has(0) && counts.has(7) && counts.has(DIGEST_MAX_LINES) && [...counts].some((n) => n > 7 && n < DIGEST_MAX_LINES)).toBe(true);
  });

  it("holds at most DIGEST_MAX_LINES ordinary plans, each section within 3000 characters", () => {
    const many = Array.from({ length: 200 }, (_, i) => line(i));
    const n = digestCapacity(many);
    expect(n).toBeGreaterThan(10);
    expect(n).toBeLessThanOrEqual(DIGEST_MAX_LINES);
    const { blocks } = renderDigest(many.slice(0, n));
    for (const b of blocks as { type: string; text?: { text: string } }[])
      if (b.type === "section") expect(b.text!.text.length).toBeLessThanOrEqual(SLACK_LIMITS.sectionText);
    expect(validateBlocks(blocks as never)).toEqual([]);
  });
});

describe("renderDigestReply", () => {
  it("names the plan a reply in the digest's thread is about, escaped, and keeps the reply", () => {
    const reply = renderThreadReply({ type: "plan.approved", approvers: ["U0ALICE"] });
    const m = renderDigestReply(line(5, { title: "<!here> deploy" }), reply);
    expect(m.blocks[0]).toMatchObject({ type: "context" });
    const head = textOf(m.blocks[0]);
    expect(head).toContain("&lt;!here&gt; deploy");
    expect(head).toContain("`0005abababab`");
    expect(head).toContain("/plans/00000000-0000-4000-8000-000000000005|open>");
    expect(m.blocks.slice(1)).toEqual(reply.blocks);
    expect(m.text).toContain(reply.text);
    expect(m.text).not.toContain("<!here>");
  });

  it("stays within Slack's limits when the reply already fills them", () => {
    const full = {
      text: "x",
      blocks: Array.from({ length: SLACK_LIMITS.blocks }, () => ({ type: "section", text: { type: "mrkdwn", text: "y".repeat(150) } })),
    };
    const m = renderDigestReply(line(6), full);
    expect(m.blocks.length).toBeLessThanOrEqual(SLACK_LIMITS.blocks);
    expect(JSON.stringify(m.blocks).length).toBeLessThanOrEqual(BLOCKS_JSON_BUDGET);
    expect(m.blocks[0]).toMatchObject({ type: "context" });
  });
});
