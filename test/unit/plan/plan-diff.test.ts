import { describe, expect, it } from "vitest";
import { isEmptyDiff, planDiff, type Version } from "../../../src/policy/plan-diff.ts";
import type { ActionPreview } from "../../../src/contract/agent-api.ts";
import { MASK, redactionRules } from "../../../src/policy/redact.ts";

const rules = redactionRules();
const action = (path: string, after: ActionPreview["after"], more: Partial<ActionPreview> = {}): ActionPreview => ({
  target: "crm",
  path,
  op: "merge",
  before: { id: 1 },
  after,
  version: '"v1"',
  changes: [],
  ...more,
});
const version = (id: string, actions: ActionPreview[]): Version => ({ id, hash: `sha256:${id.padEnd(64, "0")}`, actions });

describe("planDiff (Changed since version …)", () => {
  it("names actions added, removed and changed, with the after-state difference of each changed one", () => {
    const old = version("a1", [
      action("/contacts/1", { id: 1, email: "a@old.example", name: "Ana" }),
      action("/contacts/2", { id: 2, email: "b@example.com" }),
      action("/contacts/3", { id: 3 }),
    ]);
    const next = version("b2", [
      action("/contacts/1", { id: 1, email: "a@new.example", name: "Ana" }),
      action("/contacts/3", { id: 3 }),
      action("/contacts/4", { id: 4 }, { op: "create", before: null }),
    ]);
    expect(planDiff(old, next, rules)).toEqual({
      since: { id: "a1", hash: old.hash },
      added: [{ target: "crm", path: "/contacts/4", op: "create" }],
      removed: [{ target: "crm", path: "/contacts/2", op: "merge" }],
      changed: [{ target: "crm", path: "/contacts/1", op: "merge", changes: [{ path: "/email", from: "a@old.example", to: "a@new.example" }] }],
      unchanged: 1,
    });
  });

  it("matches an action by its canonical path, and reports a different op even when the result is the same", () => {
    const old = version("a1", [action("/contacts/1", { id: 1 }, { op: "merge" })]);
    const next = version("b2", [action("/contacts/%31", { id: 1 }, { op: "replace" })]);
    const diff = planDiff(old, next, rules);
    expect(diff.added).toEqual([]);
    expect(diff.changed).toEqual([{ target: "crm", path: "/contacts/%31", op: "replace", wasOp: "merge", changes: [] }]);
  });

  it("masks a changed secret as previews do, but still shows that it changed", () => {
    const old = version("a1", [action("/keys/1", { apiToken: "old-secret", note: "x" })]);
    const next = version("b2", [action("/keys/1", { apiToken: "new-secret", note: "x" })]);
    const [changed] = planDiff(old, next, rules).changed;
    expect(changed!.changes).toEqual([{ path: "/apiToken", from: MASK, to: MASK }]);
    expect(JSON.stringify(changed)).not.toContain('secret"');
  });

  it("a delete's absent after-state against a write is a change of the whole resource", () => {
    const old = version("a1", [action("/contacts/1", { id: 1 })]);
    const next = version("b2", [action("/contacts/1", null, { op: "delete" })]);
    expect(planDiff(old, next, rules).changed).toEqual([
      { target: "crm", path: "/contacts/1", op: "delete", wasOp: "merge", changes: [{ path: "", from: { id: 1 } }] },
    ]);
  });

  it("an identical resubmission is an empty diff", () => {
    const same = [action("/contacts/1", { id: 1 })];
    expect(isEmptyDiff(planDiff(version("a1", same), version("b2", same), rules))).toBe(true);
    expect(isEmptyDiff(planDiff(version("a1", same), version("b2", []), rules))).toBe(false);
  });
});
