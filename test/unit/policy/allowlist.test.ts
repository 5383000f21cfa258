import { describe, expect, it } from "vitest";
import { pathMatches, refusalsFor, type Allowlist } from "../../../src/policy/allowlist.ts";

describe("pathMatches", () => {
  it.each<[string, string, boolean]>([
    ["/contacts/*", "/contacts/1", true],
    ["/contacts/*", "/contacts", false],
    ["/contacts/*", "/contacts/1/notes", false],
    ["/contacts/**", "/contacts", true],
    ["/contacts/**", "/contacts/1/notes/2", true],
    ["/**", "/anything/at/all", true],
    ["/**", "/", true],
    ["/contacts/*/notes", "/contacts/7/notes", true],
    ["/contacts/*/notes", "/contacts/7/tags", false],
    ["/a/**/z", "/a/z", true],
    ["/a/**/z", "/a/b/c/z", true],
    ["/a/**/z", "/a/b/c/y", false],
    ["/contacts/1", "/contacts/10", false],
    ["/contacts/1", "/contacts/1/", true],
    ["/Contacts/*", "/contacts/1", false],
  ])("%s matches %s: %s", (pattern, path, expected) => {
    expect(pathMatches(pattern, path)).toBe(expected);
  });
});

const ALLOW: Allowlist = { ops: ["merge", "create"], paths: ["/contacts/*"], maxActions: 2, maxBodyBytes: 32 };

describe("refusalsFor (deny by default)", () => {
  it.each<[string, Allowlist | undefined, Parameters<typeof refusalsFor>[2], { rule: string; path: string }[]]>([
    ["an allowed merge", ALLOW, [{ index: 0, op: "merge", path: "/contacts/1", body: { a: 1 } }], []],
    [
      "a target without an allow block",
      undefined,
      [{ index: 3, op: "merge", path: "/contacts/1", body: {} }],
      [{ rule: "targets.crm.allow", path: "/actions/3/target" }],
    ],
    ["an op not listed", ALLOW, [{ index: 0, op: "delete", path: "/contacts/1" }], [{ rule: "targets.crm.allow.ops", path: "/actions/0/op" }]],
    [
      "a path outside the patterns",
      ALLOW,
      [{ index: 1, op: "merge", path: "/admin/users", body: {} }],
      [{ rule: "targets.crm.allow.paths", path: "/actions/1/path" }],
    ],
    [
      "a body over the limit",
      ALLOW,
      [{ index: 0, op: "merge", path: "/contacts/1", body: { note: "x".repeat(40) } }],
      [{ rule: "targets.crm.allow.maxBodyBytes", path: "/actions/0/body" }],
    ],
    [
      "too many actions",
      ALLOW,
      [0, 1, 2].map((i) => ({ index: i, op: "merge" as const, path: `/contacts/${i}`, body: {} })),
      [{ rule: "targets.crm.allow.maxActions", path: "/actions" }],
    ],
    [
      "several problems at once",
      ALLOW,
      [{ index: 0, op: "replace", path: "/secrets/1", body: { x: "y".repeat(64) } }],
      [
        { rule: "targets.crm.allow.ops", path: "/actions/0/op" },
        { rule: "targets.crm.allow.paths", path: "/actions/0/path" },
        { rule: "targets.crm.allow.maxBodyBytes", path: "/actions/0/body" },
      ],
    ],
  ])("%s", (_name, allow, actions, expected) => {
    const refusals = refusalsFor("crm", allow, actions);
    expect(refusals.map(({ rule, path }) => ({ rule, path }))).toEqual(expected);
    for (const r of refusals) expect(r.message.length).toBeGreaterThan(15);
  });
});
