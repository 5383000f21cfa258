import { describe, expect, it } from "vitest";
import { alikeGroups, alikeOffers, likenessOf, likenessSummary } from "../../../src/plan/alike.ts";
import type { PlanDocument, PlannedAction } from "../../../src/plan/schema.ts";

const DIGEST = `sha256:${"a".repeat(64)}`;

function http(path: string, op: "merge" | "replace" | "create" | "delete", body?: unknown, target = "crm"): PlannedAction {
  return {
    kind: "http.json",
    target,
    path,
    op,
    ...(body === undefined ? {} : { body: body as never }),
    precondition: { etag: '"1"' },
    beforeDigest: DIGEST,
    afterDigest: DIGEST,
  };
}

function row(op: "update" | "insert" | "delete", values?: Record<string, unknown>, table = "contacts"): PlannedAction {
  return {
    kind: "postgres.row",
    target: "crmdb",
    path: `/${table}/1`,
    table,
    op,
    key: { id: "1" },
    ...(values ? { values: values as never } : {}),
    precondition: { version: "1" },
    beforeDigest: DIGEST,
    afterDigest: DIGEST,
  };
}

function plan(actions: PlannedAction[], more: { agent?: string; batch?: false } = {}): Pick<PlanDocument, "agent" | "actions" | "policy"> {
  return {
    agent: more.agent ?? "crm-bot",
    actions,
    policy: { approvers: ["U0ALICE"], requiredApprovals: 1, grantTtlSeconds: 600, ...(more.batch === false ? { batch: false } : {}) },
  };
}

const keyOf = (doc: Pick<PlanDocument, "agent" | "actions" | "policy">) => likenessOf(doc)?.key;

describe("likenessOf: plans are alike when they share agent, target, op and the fields they change", () => {
  it("two merges of the same fields on different resources are alike, whatever the values", () => {
    const a = keyOf(plan([http("/contacts/1", "merge", { email: "a@x", tier: "gold" })]));
    const b = keyOf(plan([http("/contacts/2", "merge", { tier: "silver", email: "b@y" })]));
    expect(a).toMatch(/^[0-9a-f]{32}$/);
    expect(b).toBe(a);
  });

  it.each([
    ["another agent", plan([http("/contacts/2", "merge", { email: "b@y" })], { agent: "other-bot" })],
    ["another target", plan([http("/contacts/2", "merge", { email: "b@y" }, "billing")])],
    ["another op", plan([http("/contacts/2", "replace", { email: "b@y" })])],
    ["another field", plan([http("/contacts/2", "merge", { phone: "1" })])],
    ["one field more", plan([http("/contacts/2", "merge", { email: "b@y", phone: "1" })])],
    ["a nested field instead", plan([http("/contacts/2", "merge", { email: { work: "b@y" } })])],
    ["a second action", plan([http("/contacts/2", "merge", { email: "b@y" }), http("/contacts/3", "merge", { email: "c@y" })])],
  ])("differs with %s", (_what, other) => {
    expect(keyOf(other)).not.toBe(keyOf(plan([http("/contacts/1", "merge", { email: "a@x" })])));
  });

  it("fields are JSON Pointers: nested members are walked, arrays and removals (null) are one field", () => {
    const likeness = likenessOf(plan([http("/c/1", "merge", { address: { city: "Lisbon", "a/b": 1 }, tags: ["x", "y"], fax: null })]))!;
    expect(likeness.actions).toEqual([{ target: "crm", op: "merge", fields: ["/address/a~1b", "/address/city", "/fax", "/tags"] }]);
    // An array of another length is the same field.
    expect(keyOf(plan([http("/c/2", "merge", { address: { city: "Porto", "a/b": 2 }, tags: ["z"], fax: null })]))).toBe(likeness.key);
  });

  it("a delete, and a body that is no object, write the whole resource", () => {
    expect(likenessOf(plan([http("/c/1", "delete")]))!.actions[0]!.fields).toEqual([""]);
    expect(likenessOf(plan([http("/c/1", "merge", "whole")]))!.actions[0]!.fields).toEqual([""]);
    expect(keyOf(plan([http("/c/1", "delete")]))).toBe(keyOf(plan([http("/c/9", "delete")])));
  });

  it("postgres.row: the table and the columns set; a delete is the whole row", () => {
    const a = likenessOf(plan([row("update", { status: "closed", note: "x" })]))!;
    expect(a.actions).toEqual([{ target: "crmdb", table: "contacts", op: "update", fields: ["/note", "/status"] }]);
    expect(keyOf(plan([row("update", { note: "y", status: "open" })]))).toBe(a.key);
    expect(keyOf(plan([row("update", { note: "y", status: "open" }, "accounts")]))).not.toBe(a.key);
    expect(likenessOf(plan([row("delete")]))!.actions[0]!.fields).toEqual([""]);
  });

  it("the order of a plan's actions does not matter", () => {
    const one = http("/c/1", "merge", { email: "a" });
    const two = row("update", { status: "x" });
    expect(keyOf(plan([one, two]))).toBe(keyOf(plan([two, one])));
  });

  it("a plan whose policy keeps it out of batches has no likeness", () => {
    expect(likenessOf(plan([http("/c/1", "merge", { email: "a" })], { batch: false }))).toBeUndefined();
  });

  it("the summary names target, op and fields, with bidi controls made visible", () => {
    expect(likenessSummary(likenessOf(plan([http("/c/1", "merge", { email: "a", tier: "b" })]))!)).toBe("crm merge /email, /tier");
    expect(likenessSummary(likenessOf(plan([http("/c/1", "merge", { "e\u202Email": "a" })]))!)).toBe("crm merge /e⟨U+202E⟩mail");
  });
});

describe("alikeGroups and alikeOffers", () => {
  const email = (id: string) => ({ id, likeness: likenessOf(plan([http(`/c/${id}`, "merge", { email: id })])) });
  const phone = (id: string) => ({ id, likeness: likenessOf(plan([http(`/c/${id}`, "merge", { phone: id })])) });
  const kept = (id: string) => ({ id, likeness: likenessOf(plan([http(`/c/${id}`, "merge", { email: id })], { batch: false })) });

  it("groups two or more alike plans in the order given; a single plan or one kept out of batches is in none", () => {
    const groups = alikeGroups([email("1"), phone("2"), kept("3"), email("4"), phone("5"), email("6"), { id: "7", likeness: undefined }]);
    expect(groups.map((g) => g.planIds)).toEqual([
      ["1", "4", "6"],
      ["2", "5"],
    ]);
    expect(alikeGroups([email("1"), phone("2"), kept("3")])).toEqual([]);
  });

  it("offers name the first plan of each group, how many, and what they share", () => {
    expect(alikeOffers([phone("2"), email("1"), email("4")])).toEqual([{ like: "1", count: 2, summary: "crm merge /email" }]);
  });
});
