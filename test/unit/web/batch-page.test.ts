import { describe, expect, it } from "vitest";
import type { BatchDecision, BatchView } from "../../../src/service/batch/index.ts";
import { AlikeOffers, BatchDecidedPage, BatchPage } from "../../../src/web/batch-page.tsx";

const SESSION = { userId: "U0ALICE", name: "Alice", csrfToken: "csrf-token-1" };
const HOSTILE = `<script>alert(1)</script><img src=x onerror="x()">`;

const batch: BatchView = {
  id: "11111111-2222-4333-8444-555555555555",
  reviewer: "U0ALICE",
  via: "web",
  alike: `crm merge /email, /${HOSTILE}`,
  agent: "crm-bot",
  createdAt: "2026-12-03T08:00:00.000Z",
  expiresAt: "2026-12-03T08:10:00.000Z",
  more: 3,
  plans: [
    {
      planId: "00000000-0000-4000-8000-000000000001",
      hash: `sha256:0001${"ab".repeat(30)}`,
      title: HOSTILE,
      status: "pending",
      expiresAt: "2026-12-03T08:15:00.000Z",
      reviewUrl: "https://countersign.example/plans/00000000-0000-4000-8000-000000000001",
      actions: [{ target: "crm", path: "/contacts/1", op: "merge", changes: [{ path: "/password", from: "•••••• (secret)", to: "•••••• (secret)" }] }],
    },
  ],
  url: "https://countersign.example/batches/11111111-2222-4333-8444-555555555555",
};

describe("the batch page", () => {
  it("binds its forms to the batch with the session's CSRF token, shows each change as given (masked) and escapes plan text", () => {
    const html = String(BatchPage({ batch, session: SESSION }));
    expect(html).toContain(`action="/batches/${batch.id}/approve"`);
    expect(html).toContain(`action="/batches/${batch.id}/reject"`);
    // Approve-all, Reject-all, and the header's Sign out.
    expect(html.match(/name="_csrf" value="csrf-token-1"/g)).toHaveLength(3);
    expect(html).toContain(">1 plan</a>");
    expect(html).toContain("Approve all");
    expect(html).toContain('form="batch-reject-form"');
    expect(html).toContain("•••••• (secret)");
    expect(html).toContain("3 more alike plans wait for you");
    expect(html).not.toContain("<script>alert(1)");
    expect(html).not.toContain("<img src=x");
    expect(html).toContain("&lt;script&gt;");
  });

  it("the answer lists each plan with its result and, when refused, its code and why", () => {
    const decision: BatchDecision = {
      batchId: batch.id,
      verdict: "approve",
      outcomes: [
        { planId: "p1", hash: `sha256:0001${"ab".repeat(30)}`, title: "One", reviewUrl: "", result: { kind: "approved" } },
        { planId: "p2", hash: `sha256:0002${"ab".repeat(30)}`, title: "Two", reviewUrl: "", result: { kind: "counted", approvals: 1, requiredApprovals: 2 } },
        {
          planId: "p3",
          hash: `sha256:0003${"ab".repeat(30)}`,
          title: "Three",
          reviewUrl: "",
          result: { kind: "refused", code: "already_decided", message: "…", status: "stale" },
        },
        {
          planId: "p4",
          hash: `sha256:0004${"ab".repeat(30)}`,
          title: HOSTILE,
          reviewUrl: "",
          result: { kind: "refused", code: "self_approval", message: "…" },
        },
      ],
    };
    const html = String(BatchDecidedPage({ decision, session: SESSION }));
    expect(html).toContain("Approved like plans: 1 approved, 1 approval counted, 2 refused");
    expect(html).toContain("approval counted (1 of 2)");
    expect(html).toContain("already_decided: It was already decided (stale).");
    expect(html).toContain("self_approval: It was requested on your behalf, or you edited it or asked for it, so someone else must decide it.");
    expect(html).not.toContain("<script>alert(1)");
  });

  it("the list's offers link to opening a batch alike to their first plan", () => {
    expect(AlikeOffers({ offers: [] })).toBeNull();
    const html = String(AlikeOffers({ offers: [{ like: "00000000-0000-4000-8000-000000000009", count: 4, summary: `crm merge ${HOSTILE}` }] }));
    expect(html).toContain('href="/plans/00000000-0000-4000-8000-000000000009/alike"');
    expect(html).toContain("Review 4 like plans");
    expect(html).not.toContain("<script>alert(1)");
  });
});
