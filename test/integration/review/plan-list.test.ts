import { beforeAll, describe, expect, it } from "vitest";
import { expireDue } from "../../../src/service/watch/expire-due.ts";
import type { ServiceContext } from "../../../src/service/context.ts";
import type { PlanView } from "../../../src/service/lifecycle/plan-view.ts";
import { listForBrowser, listPendingForReview, parsePendingCursor, pendingCursorText, type PendingCursor } from "../../../src/service/review/review-plan.ts";
import { ServiceError } from "../../../src/service/errors.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { PlansTable } from "../../../src/web/plans-page.tsx";
import { databaseKinds } from "../../support/databases.ts";
import { mergeRequest, targetConfig } from "../../support/harness.ts";
import { useHarness } from "../../support/use-harness.ts";

/** More than a page of 100 newest plans: pending ones past it must still be listed. */
const NEWER = 105;

describe.each(databaseKinds)("the browser list keeps every pending plan, however old, on $name", (kind) => {
  /** hr plans are Rita's to approve; crm plans have the default approvers. */
  const h = useHarness(kind, {
    targets: (url) => ({ crm: targetConfig(url), hr: targetConfig(url, { policy: { approvers: ["U0RITA"], requiredApprovals: 1 } }) }),
  });
  /** browser.readers names Oscar, so he reads every plan; Rita reads only what she may approve. */
  let narrowed: ServiceContext;
  let oldest: PlanView;
  /** Pending after the newer plans expired, soonest expiry first: [soon, later, oldest]. */
  let pendingBySoonest: PlanView[];

  beforeAll(async () => {
    narrowed = { ...h.ctx, config: { ...h.ctx.config, browser: { ...h.ctx.config.browser, readers: ["U0OSCAR"] } } };
    const submit = async (title: string, ttlSeconds?: number, target = "crm") =>
      (
        await submitPlan(h.ctx, {
          agent: h.agent,
          request: mergeRequest({
            title,
            ...(ttlSeconds ? { ttlSeconds } : {}),
            actions: [{ kind: "http.json", target, path: "/contacts/1", op: "merge", body: { email: `${title.replaceAll(" ", "-")}@x.example` } }],
          }),
        })
      ).plan;
    // The oldest plan waits longest (a day); every newer one expires undecided after 15 minutes.
    oldest = await submit("oldest pending hr plan", 86_400, "hr");
    for (let n = 1; n <= NEWER; n++) {
      h.clock.advance(1);
      await submit(`newer plan ${n}`);
    }
    h.clock.advance(901);
    while ((await expireDue(h.ctx)).length > 0) {
      /* the sweeper takes 100 at a time */
    }
    const later = await submit("later pending plan", 3_600);
    h.clock.advance(1);
    const soon = await submit("soon pending hr plan", 600, "hr");
    pendingBySoonest = [soon, later, oldest];
  });

  it(`lists a pending plan older than ${NEWER} newer decided ones, apart from the recent ones`, async () => {
    const list = await listForBrowser(narrowed, { reader: { userId: "U0OSCAR" } });
    expect(list.pending.map((p) => p.plan.title)).toEqual(pendingBySoonest.map((p) => p.plan.title));
    expect(list.nextPending).toBeUndefined();
    expect(list.recent).toHaveLength(100);
    expect(list.recent.every((p) => p.status === "expired")).toBe(true);
    expect(list.recent[0]!.plan.title).toBe(`newer plan ${NEWER}`);
  });

  it("pages through pending plans soonest expiry first, each once, to the last page", async () => {
    const seen: string[] = [];
    let after: PendingCursor | undefined;
    for (let pages = 0; pages < 10; pages++) {
      const page = await listPendingForReview(narrowed, {
        reader: { userId: "U0OSCAR" },
        limit: 2,
        ...(after ? { after: parsePendingCursor(pendingCursorText(after)) } : {}),
      });
      seen.push(...page.plans.map((p) => p.id));
      if (!page.next) break;
      after = page.next;
    }
    expect(seen).toEqual(pendingBySoonest.map((p) => p.id));
  });

  it("someone who reads only what they approve gets their pending plans, and only those", async () => {
    const list = await listForBrowser(narrowed, { reader: { userId: "U0RITA" } });
    expect(list.pending.map((p) => p.plan.title)).toEqual(["soon pending hr plan", "oldest pending hr plan"]);
    expect(list.pending.every((p) => p.whyNotDecide === undefined)).toBe(true);
    expect(list.recent).toEqual([]);
    // A page of one: the crm plan between her two is skipped, not a page of its own.
    const first = await listPendingForReview(narrowed, { reader: { userId: "U0RITA" }, limit: 1 });
    expect(first.plans.map((p) => p.plan.title)).toEqual(["soon pending hr plan"]);
    const second = await listPendingForReview(narrowed, { reader: { userId: "U0RITA" }, limit: 1, after: first.next! });
    expect(second.plans.map((p) => p.plan.title)).toEqual(["oldest pending hr plan"]);
    expect(second.next).toBeUndefined();
  });

  it("a status filter without pending lists no pending plan; with only pending, no recent ones", async () => {
    const expired = await listForBrowser(narrowed, { reader: { userId: "U0OSCAR" }, statuses: ["expired"] });
    expect(expired.pending).toEqual([]);
    expect(expired.recent).toHaveLength(100);
    const pending = await listForBrowser(narrowed, { reader: { userId: "U0OSCAR" }, statuses: ["pending"] });
    expect(pending.pending).toHaveLength(3);
    expect(pending.recent).toEqual([]);
  });

  it("the page shows the pending plans first and links to the next page of them", async () => {
    const page = await listPendingForReview(narrowed, { reader: { userId: "U0OSCAR" }, limit: 2 });
    const html = String(
      PlansTable({
        list: { pending: page.plans, nextPending: page.next, recent: [] },
        session: undefined,
        page: { filter: undefined, pendingAfter: undefined },
      }),
    );
    expect(html.indexOf("soon pending hr plan")).toBeGreaterThan(html.indexOf("Waiting for a decision"));
    expect(html).toContain("later pending plan");
    expect(html).not.toContain("oldest pending hr plan");
    expect(html).toContain(`href="/plans?pending_after=${encodeURIComponent(pendingCursorText(page.next!))}"`);
  });
});

describe("a pending-page cursor", () => {
  it("round-trips, and anything else is refused naming what it must be", () => {
    const cursor = { expiresAt: new Date("2026-12-03T07:00:00.123Z"), id: "5d5a0f3e-8a4c-4d4b-9a57-1c2b3d4e5f60" };
    expect(parsePendingCursor(pendingCursorText(cursor))).toEqual(cursor);
    for (const bad of [
      "",
      "yesterday~5d5a0f3e-8a4c-4d4b-9a57-1c2b3d4e5f60",
      "2026-12-03T07:00:00.123Z~not-an-id",
      "2026-12-03T07:00:00.123Z~5d5a0f3e-8a4c-4d4b-9a57-1c2b3d4e5f60~x",
      "0000-01-01T00:00:00.000Z~5d5a0f3e-8a4c-4d4b-9a57-1c2b3d4e5f60",
    ]) {
      expect(() => parsePendingCursor(bad)).toThrow(ServiceError);
      expect(() => parsePendingCursor(bad)).toThrow(/pending_after must be "<expiry>~<plan id>"/);
    }
  });
});
