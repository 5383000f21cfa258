import { describe, expect, it } from "vitest";
import { fingerprint } from "../../../src/plan/fingerprint.ts";
import type { Json } from "../../../src/plan/json.ts";
import { applyMergePatch } from "../../../src/plan/merge-patch.ts";
import type { ActionOutcome, Outcome } from "../../../src/plan/outcome.ts";
import { ActionRequest, type PlannedAction } from "../../../src/plan/schema.ts";
import { restoringPatch, setAt, targetChangesSince, undoSteps, whyNotUndoable, type UndoSource } from "../../../src/plan/undo-actions.ts";

const digest = fingerprint(null);

function httpAction(path: string, op: "merge" | "replace" | "create" | "delete", body?: Json): PlannedAction {
  return {
    kind: "http.json",
    target: "crm",
    path,
    op,
    ...(body !== undefined ? { body } : {}),
    precondition: op === "create" ? { absent: true } : { etag: '"1"' },
    beforeDigest: digest,
    afterDigest: digest,
  };
}

function rowAction(id: number, op: "update" | "insert" | "delete", values?: Record<string, Json>): PlannedAction {
  return {
    kind: "postgres.row",
    target: "crmdb",
    path: `/contacts/${id}`,
    table: "contacts",
    op,
    key: { id },
    ...(values ? { values } : {}),
    precondition: op === "insert" ? { absent: true } : { version: "7" },
    beforeDigest: digest,
    afterDigest: digest,
  };
}

const applied = (index: number, extra: Partial<ActionOutcome> = {}): ActionOutcome => ({
  index,
  target: "crm",
  path: "/x",
  status: "applied",
  verified: true,
  ...extra,
});

function source(
  actions: { planned: PlannedAction; before: Json | null; after: Json | null }[],
  outcome?: Partial<Outcome>,
  status: UndoSource["status"] = "applied",
): UndoSource {
  return {
    status,
    document: { actions: actions.map((a) => a.planned) },
    preview: { actions: actions.map((a) => ({ before: a.before, after: a.after })) },
    outcome: { status: status === "failed" ? "failed" : "applied", actions: actions.map((_, i) => applied(i)), ...outcome },
  };
}

/** What an undo step sends, parsed as an agent's action would be: every step must be a valid request. */
const requestsOf = (s: UndoSource) =>
  undoSteps(s).map((step) => {
    if (!step.request) throw new Error(`step ${step.undoes} was refused: ${step.refused}`);
    return ActionRequest.parse(step.request);
  });

describe("whyNotUndoable", () => {
  it.each([
    ["applied", undefined, false],
    ["failed", { partial: true }, false],
    ["failed", {}, true],
    ["pending", undefined, true],
    ["rejected", undefined, true],
    ["stale", undefined, true],
    ["superseded", undefined, true],
  ] as const)("%s %j: refused %s", (status, outcome, refused) => {
    const why = whyNotUndoable({ status, outcome: outcome ? { status: "failed", actions: [], ...outcome } : null });
    expect(why !== undefined).toBe(refused);
  });
});

describe("undoing http.json actions", () => {
  it("merges back a changed member and removes with null a member the merge added", () => {
    const before = { id: 1, name: "Ana", email: "ana@old.example" };
    const after = { id: 1, name: "Ana", email: "ana@new.example", phone: "123" };
    const [request] = requestsOf(source([{ planned: httpAction("/contacts/1", "merge", { email: "ana@new.example", phone: "123" }), before, after }]));
    expect(request).toEqual({ kind: "http.json", target: "crm", path: "/contacts/1", op: "merge", body: { email: "ana@old.example", phone: null } });
    expect(applyMergePatch(after, (request as { body: Json }).body)).toEqual(before);
  });

  it("patches nested objects member by member, and arrays whole", () => {
    const before = { a: { x: 1, y: 2 }, tags: [1, null, 3], gone: { deep: true } };
    const after = { a: { x: 5, y: 2, z: 9 }, tags: [1] };
    const [request] = requestsOf(source([{ planned: httpAction("/d", "merge", {}), before, after }]));
    expect(request).toMatchObject({ op: "merge", body: { a: { x: 1, z: null }, tags: [1, null, 3], gone: { deep: true } } });
    expect(applyMergePatch(after, (request as { body: Json }).body)).toEqual(before);
  });

  it("replaces with the document before when a member it changed was JSON null (a merge patch cannot write null)", () => {
    const before = { id: 1, note: null, nested: { keep: 1 } };
    const after = { id: 1, note: "set" };
    const [request] = requestsOf(source([{ planned: httpAction("/contacts/1", "merge", { note: "set" }), before, after }]));
    expect(request).toEqual({ kind: "http.json", target: "crm", path: "/contacts/1", op: "replace", body: before });
  });

  it("replaces when a member to bring back holds a null inside an object", () => {
    const before = { id: 1, prefs: { a: null } };
    const after = { id: 1 };
    expect(requestsOf(source([{ planned: httpAction("/c", "merge", { prefs: null }), before, after }]))[0]).toMatchObject({ op: "replace", body: before });
  });

  it("replaces back, deletes what a create made, and creates again what a delete removed", () => {
    const s = source([
      { planned: httpAction("/a", "replace", { v: 2 }), before: { v: 1, w: 0 }, after: { v: 2 } },
      { planned: httpAction("/b", "create", { v: 1 }), before: null, after: { v: 1 } },
      { planned: httpAction("/c", "delete"), before: { v: 3 }, after: null },
    ]);
    expect(requestsOf(s)).toEqual([
      { kind: "http.json", target: "crm", path: "/c", op: "create", body: { v: 3 } },
      { kind: "http.json", target: "crm", path: "/b", op: "delete" },
      { kind: "http.json", target: "crm", path: "/a", op: "replace", body: { v: 1, w: 0 } },
    ]);
    expect(undoSteps(s).map((step) => step.undoes)).toEqual([2, 1, 0]);
  });

  it("refuses to write back a document that is not an object or array, naming it", () => {
    const [step] = undoSteps(source([{ planned: httpAction("/flag", "replace", { on: true }), before: "off", after: { on: true } }]));
    expect(step!.request).toBeUndefined();
    expect(step!.refused).toMatch(/"off", not a JSON object or array/);
  });

  it("takes back only the actions the executor reported applied (a partial failure), skipping those that changed nothing", () => {
    const s = source(
      [
        { planned: httpAction("/a", "merge", { v: 2 }), before: { v: 1 }, after: { v: 2 } },
        { planned: httpAction("/same", "merge", { v: 1 }), before: { v: 1 }, after: { v: 1 } },
        { planned: httpAction("/b", "merge", { v: 2 }), before: { v: 1 }, after: { v: 2 } },
      ],
      { partial: true, actions: [applied(0), applied(1), { index: 2, target: "crm", path: "/b", status: "failed", detail: "HTTP 500" }] },
      "failed",
    );
    expect(whyNotUndoable(s)).toBeUndefined();
    expect(undoSteps(s).map((step) => step.path)).toEqual(["/a"]);
  });

  it("undoes a write that did not land as approved from the state re-read after it", () => {
    const before = { email: "a@old", name: "Ana" };
    const after = { email: "a@new", name: "Ana B" };
    const s = source([{ planned: httpAction("/c", "merge", { email: "a@new", name: "Ana B" }), before, after }], {
      actions: [applied(0, { verified: false, driftAfterApply: [{ path: "/name", expected: "Ana B", actual: "Ana C" }] })],
    });
    const [step] = undoSteps(s);
    expect(step!.fromReRead).toBe(true);
    expect(step!.expectedNow).toEqual({ email: "a@new", name: "Ana C" });
    expect(step!.request).toMatchObject({ op: "merge", body: { email: "a@old", name: "Ana" } });
    // The target as re-read is what the undo expects: the drifted field is no change since.
    expect(targetChangesSince(step!, { email: "a@new", name: "Ana C", updatedAt: "later" })).toEqual([]);
    // Someone set the drifted field since: it no longer holds what the re-read found.
    expect(targetChangesSince(step!, { email: "a@new", name: "Ana B" })).toEqual([{ path: "/name", expected: "Ana C", actual: "Ana B" }]);
  });
});

describe("targetChangesSince", () => {
  const [step] = undoSteps(
    source([
      { planned: httpAction("/c", "merge", { email: "new" }), before: { id: 1, email: "old", name: "Ana" }, after: { id: 1, email: "new", name: "Ana" } },
    ]),
  );

  it("is empty when the target holds the approved after-state over the fields the plan changed, whatever else it holds", () => {
    expect(targetChangesSince(step!, { id: 1, email: "new", name: "Ana Renamed", updatedAt: "x" })).toEqual([]);
  });

  it("names each field someone changed since, with the value approved and the one there now", () => {
    expect(targetChangesSince(step!, { id: 1, email: "other", name: "Ana" })).toEqual([{ path: "/email", expected: "new", actual: "other" }]);
    expect(targetChangesSince(step!, undefined)).toEqual([{ path: "", expected: { id: 1, email: "new", name: "Ana" } }]);
  });

  it("a drifted field must still hold what the re-read found", () => {
    const [drifted] = undoSteps(
      source([{ planned: httpAction("/c", "merge", { email: "new" }), before: { email: "old" }, after: { email: "new" } }], {
        actions: [applied(0, { verified: false, driftAfterApply: [{ path: "/email", expected: "new", actual: "mangled" }] })],
      }),
    );
    expect(targetChangesSince(drifted!, { email: "mangled" })).toEqual([]);
    expect(targetChangesSince(drifted!, { email: "new" })).toEqual([{ path: "/email", expected: "mangled", actual: "new" }]);
    expect(targetChangesSince(drifted!, {})).toEqual([{ path: "/email", expected: "mangled" }]);
  });
});

describe("undoing postgres.row actions", () => {
  it("updates back the columns the update changed, inserts again a deleted row without its key, deletes an inserted one", () => {
    const s = source([
      {
        planned: rowAction(1, "update", { email: "new@x", score: "5.00" }),
        before: { id: 1, name: "Ada", email: "old@x", score: "5.00" },
        after: { id: 1, name: "Ada", email: "new@x", score: "5.00" },
      },
      { planned: rowAction(2, "insert", { name: "Bea" }), before: null, after: { id: 2, name: "Bea" } },
      { planned: rowAction(3, "delete"), before: { id: 3, name: "Cid", email: null }, after: null },
    ]);
    expect(requestsOf(s)).toEqual([
      { kind: "postgres.row", target: "crmdb", table: "contacts", key: { id: 3 }, op: "insert", values: { name: "Cid", email: null } },
      { kind: "postgres.row", target: "crmdb", table: "contacts", key: { id: 2 }, op: "delete" },
      { kind: "postgres.row", target: "crmdb", table: "contacts", key: { id: 1 }, op: "update", values: { email: "old@x" } },
    ]);
  });

  it("sets back a column the update left as the re-read found it only where it differs", () => {
    const s = source(
      [
        {
          planned: rowAction(1, "update", { email: "new@x", name: "Ad" }),
          before: { id: 1, name: "Ada", email: "old@x" },
          after: { id: 1, name: "Ad", email: "new@x" },
        },
      ],
      { actions: [applied(0, { verified: false, driftAfterApply: [{ path: "/name", expected: "Ad", actual: "Ada" }] })] },
    );
    expect(requestsOf(s)).toEqual([{ kind: "postgres.row", target: "crmdb", table: "contacts", key: { id: 1 }, op: "update", values: { email: "old@x" } }]);
  });

  it("has nothing to do for an update whose every column already holds its value before", () => {
    const s = source([{ planned: rowAction(1, "update", { name: "Ada" }), before: { id: 1, name: "Ada" }, after: { id: 1, name: "Ada" } }]);
    expect(undoSteps(s)).toEqual([]);
  });
});

describe("restoringPatch", () => {
  const cases: [string, Json, Json][] = [
    ["a member changed", { a: 1 }, { a: 2 }],
    ["a member added and one removed", { a: 1, b: 2 }, { a: 1, c: 3 }],
    ["nested members", { o: { p: { q: 1, r: [1] } } }, { o: { p: { q: 2 } }, s: "x" }],
    ["an object where a scalar was", { a: "text" }, { a: { b: 1 } }],
    ["a scalar where an object was", { a: { b: 1 } }, { a: false }],
    ["members named like Object.prototype", { constructor: 1, toString: "a" }, { constructor: 2, ["__proto__"]: "x" } as Json],
  ];
  it.each(cases)("%s: applying the patch gives the target exactly", (_name, from, to) => {
    const patch = restoringPatch(from, to);
    expect(typeof patch).not.toBe("symbol");
    expect(patch).not.toBeUndefined();
    expect(applyMergePatch(from, patch as Json)).toEqual(to);
  });

  it("cannot write a JSON null member", () => {
    expect(restoringPatch({ a: 1 }, { a: null })).toBeUndefined();
    expect(restoringPatch({}, { a: { b: null } })).toBeUndefined();
  });
});

describe("setAt", () => {
  it("sets, replaces and removes members at a pointer without changing its input", () => {
    const doc: Json = { a: { b: 1 }, list: [1, 2, 3], "x/y": 0 };
    expect(setAt(doc, "/a/b", 2)).toEqual({ a: { b: 2 }, list: [1, 2, 3], "x/y": 0 });
    expect(setAt(doc, "/a/c", true)).toEqual({ a: { b: 1, c: true }, list: [1, 2, 3], "x/y": 0 });
    expect(setAt(doc, "/a", undefined)).toEqual({ list: [1, 2, 3], "x/y": 0 });
    expect(setAt(doc, "/list/1", 9)).toEqual({ a: { b: 1 }, list: [1, 9, 3], "x/y": 0 });
    expect(setAt(doc, "/x~1y", 5)).toEqual({ a: { b: 1 }, list: [1, 2, 3], "x/y": 5 });
    expect(setAt(doc, "", undefined)).toBeUndefined();
    expect(doc).toEqual({ a: { b: 1 }, list: [1, 2, 3], "x/y": 0 });
  });
});
