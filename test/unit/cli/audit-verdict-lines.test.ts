import { describe, expect, it } from "vitest";
import { auditVerdictLines } from "../../../src/cli/agents.ts";
import type { AuditProblem, AuditVerdict } from "../../../src/service/audit/verify-audit.ts";

const counts = {
  events: 12,
  sealed: 10,
  unsealed: 2,
  pruned: 0,
  head: { seq: 4, hash: "sha256:" + "a".repeat(64), xidTo: "900", sealedAt: "2026-12-03T07:00:00.000Z" },
};

describe("audit verify's output", () => {
  it("an intact log: the count, sealed and not yet sealed, and the newest seal", () => {
    const verdict: AuditVerdict = { ok: true, ...counts, problems: [] };
    expect(auditVerdictLines(verdict)).toEqual([
      `Audit log intact: 12 event(s), every hash, link and seal checks out (10 sealed, 2 not yet sealed; newest seal 4 (sha256:${"a".repeat(64)})).`,
    ]);
  });

  it("a pruned log: how many of the sealed events a purge left as checkpoint lines, and a break there", () => {
    const pruned = { ...counts, pruned: 4 };
    expect(auditVerdictLines({ ok: true, ...pruned, problems: [] })[0]).toContain(
      "(10 sealed (4 of them pruned by retention, checked through the purge's checkpoint), 2 not yet sealed;",
    );
    const problem: AuditProblem = { chain: "pruned", kind: "edited", planId: "p-2", eventId: 5, message: "the checkpoint line of pruned event 5 links to …" };
    expect(auditVerdictLines({ ok: false, ...pruned, problem, problems: [problem] })[0]).toBe(
      "Audit log BROKEN at the purge checkpoint, event 5 (edited): the checkpoint line of pruned event 5 links to …",
    );
  });

  it("a broken log: the first break by chain, event or seal and what happened, then the next nine, then how many more", () => {
    const problems: AuditProblem[] = [
      { chain: "plan", kind: "deleted", planId: "p-1", eventId: 7, message: "event 7 links to …" },
      { chain: "seals", kind: "deleted", seal: 2, message: "seal 2: covers 5 event(s), but 4 remain: 1 were deleted" },
      { chain: "system", kind: "edited", eventId: 3, message: "event 3 does not match its hash" },
      { chain: "system", kind: "deleted", eventId: 4, message: "event 4 links to …" },
      ...Array.from({ length: 8 }, (_, i): AuditProblem => ({ chain: "seals", kind: "edited", seal: 10 + i, message: `seal ${10 + i}` })),
    ];
    const lines = auditVerdictLines({ ok: false, ...counts, problem: problems[0]!, problems });
    expect(lines[0]).toBe("Audit log BROKEN at plan p-1, event 7 (deleted): event 7 links to …");
    expect(lines.slice(1, 4)).toEqual([
      "  also at seal 2 (deleted): seal 2: covers 5 event(s), but 4 remain: 1 were deleted",
      "  also at the system chain, event 3 (edited): event 3 does not match its hash",
      "  also at the system chain, event 4 (deleted): event 4 links to …",
    ]);
    expect(lines).toHaveLength(1 + 9 + 2);
    expect(lines.at(-2)).toBe("  … and 2 more");
    expect(lines.at(-1)).toMatch(/^\(12 event\(s\) checked; 10 sealed, 2 not yet sealed; newest seal 4/);
  });
});
