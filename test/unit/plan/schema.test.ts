import { describe, expect, it } from "vitest";
import { LIMITS, PlanRequest } from "../../../src/plan/schema.ts";
import { ServiceError } from "../../../src/service/errors.ts";
import { validate } from "../../../src/service/validate.ts";

type Action = Record<string, unknown>;

const action = (overrides: Action = {}): Action => ({
  kind: "http.json",
  target: "crm",
  path: "/contacts/1",
  op: "merge",
  body: { creditLimit: 5000 },
  ...overrides,
});

const withoutKey = (o: Action, key: string): Action => {
  const copy = { ...o };
  delete copy[key];
  return copy;
};

const request = (overrides: Record<string, unknown> = {}): Record<string, unknown> => ({
  title: "Raise credit limit",
  actions: [action()],
  ...overrides,
});

/** `{a: {a: … {}}}` with `levels` objects in total. */
const nest = (levels: number): unknown => (levels <= 1 ? {} : { a: nest(levels - 1) });

/** Validates and returns the ServiceError, failing the test when nothing is thrown. */
function refusal(input: unknown): ServiceError {
  try {
    validate(PlanRequest, input, "plan request");
  } catch (err) {
    expect(err).toBeInstanceOf(ServiceError);
    return err as ServiceError;
  }
  throw new Error("expected validate() to throw");
}

const manyActions = (n: number): Action[] => Array.from({ length: n }, (_, i) => action({ path: `/contacts/${i}` }));

// Levels: request object (1) > actions (2) > action (3) > body (4) > body.a (5) …
// A body of `nest(29)` puts its innermost object at level 32; `nest(30)` at level 33.
const DEEPEST_ALLOWED_BODY = nest(29);
const TOO_DEEP_BODY = nest(30);
const TOO_DEEP_PATH = "/actions/0/body" + "/a".repeat(29);

const REFUSED: [name: string, input: unknown, issuePaths: string[], message?: RegExp][] = [
  ["missing title", withoutKey(request(), "title"), ["/title"]],
  ["title wrong type (number)", request({ title: 42 }), ["/title"]],
  ["title wrong type (null)", request({ title: null }), ["/title"]],
  ["title only whitespace (trimmed to empty)", request({ title: "   " }), ["/title"]],
  [`title longer than ${LIMITS.maxTitle}`, request({ title: "x".repeat(LIMITS.maxTitle + 1) }), ["/title"]],
  [`reason longer than ${LIMITS.maxReason}`, request({ reason: "x".repeat(LIMITS.maxReason + 1) }), ["/reason"]],
  ["unknown top-level field", request({ bogus: 1 }), ["/bogus"], /unknown field 'bogus'/],
  ["two unknown top-level fields, one issue each", request({ bogus: 1, other: 2 }), ["/bogus", "/other"]],
  ["unknown action field", request({ actions: [action({ extra: true })] }), ["/actions/0/extra"], /unknown field 'extra'/],
  ["unknown field in the third action", request({ actions: [...manyActions(2), action({ path: "/c/9", method: "PUT" })] }), ["/actions/2/method"]],
  ["missing actions", withoutKey(request(), "actions"), ["/actions"]],
  ["actions not an array", request({ actions: action() }), ["/actions"]],
  ["0 actions", request({ actions: [] }), ["/actions"]],
  [`${LIMITS.maxActions + 1} actions`, request({ actions: manyActions(LIMITS.maxActions + 1) }), ["/actions"], /at most 20 actions/],
  ["bad op", request({ actions: [action({ op: "patch" })] }), ["/actions/0/op"]],
  ["bad kind", request({ actions: [action({ kind: "sql.query" })] }), ["/actions/0/kind"]],
  ["missing kind", request({ actions: [withoutKey(action(), "kind")] }), ["/actions/0/kind"]],
  ["empty target", request({ actions: [action({ target: "" })] }), ["/actions/0/target"]],
  ["merge without body", request({ actions: [withoutKey(action(), "body")] }), ["/actions/0/body"], /needs a body/],
  ["create without body", request({ actions: [withoutKey(action({ op: "create" }), "body")] }), ["/actions/0/body"], /needs a body/],
  ["delete with body", request({ actions: [action({ op: "delete" })] }), ["/actions/0/body"], /takes no body/],
  ["delete with a null body", request({ actions: [action({ op: "delete", body: null })] }), ["/actions/0/body"], /takes no body/],
  ["replace with a string body", request({ actions: [action({ op: "replace", body: "x" })] }), ["/actions/0/body"], /object or array/],
  ["replace with a null body", request({ actions: [action({ op: "replace", body: null })] }), ["/actions/0/body"], /object or array/],
  ["create with a number body", request({ actions: [action({ op: "create", body: 1 })] }), ["/actions/0/body"], /object or array/],
  ["bad onBehalfOf (a name)", request({ onBehalfOf: "alice" }), ["/onBehalfOf"], /Slack user id/],
  ["bad onBehalfOf (lower-case id)", request({ onBehalfOf: "u024be7lh" }), ["/onBehalfOf"]],
  ["bad onBehalfOf (channel id)", request({ onBehalfOf: "C024BE7LH" }), ["/onBehalfOf"]],
  ["ttlSeconds non-integer", request({ ttlSeconds: 1.5 }), ["/ttlSeconds"]],
  ["ttlSeconds as a string", request({ ttlSeconds: "60" }), ["/ttlSeconds"]],
  ["ttlSeconds zero", request({ ttlSeconds: 0 }), ["/ttlSeconds"]],
  ["ttlSeconds negative", request({ ttlSeconds: -60 }), ["/ttlSeconds"]],
  ["empty idempotencyKey", request({ idempotencyKey: "" }), ["/idempotencyKey"]],
  [
    "two actions on the same target+path",
    request({ actions: [action(), action({ op: "replace", body: { a: 1 } })] }),
    ["/actions/1/path"],
    /again \(action 0 already does\)/,
  ],
  [
    "third action repeats the first",
    request({ actions: [action(), action({ path: "/contacts/2" }), action({ op: "delete", body: undefined })] }),
    ["/actions/2/path"],
  ],
  ["nesting deeper than 32 levels in a body", request({ actions: [action({ body: TOO_DEEP_BODY })] }), [TOO_DEEP_PATH], /nesting deeper than 32/],
  [
    "nesting deeper than 32 levels in an array body",
    request({ actions: [action({ op: "replace", body: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]] })] }),
    ["/actions/0/body" + "/0".repeat(29)],
  ],
  ["nesting deeper than 32 levels in an unknown field", request({ extra: nest(40) }), ["/extra" + "/a".repeat(31)]],
  ["unsafe path (dot segment)", request({ actions: [action({ path: "/../admin" })] }), ["/actions/0/path"], /'\.' or '\.\.'/],
  ["unsafe path (other host)", request({ actions: [action({ path: "//evil.com/x" })] }), ["/actions/0/path"]],
  ["unsafe path (absolute URL)", request({ actions: [action({ path: "http://evil" })] }), ["/actions/0/path"]],
  ["unsafe path (double-encoded)", request({ actions: [action({ path: "/a%252e%252e" })] }), ["/actions/0/path"]],
  ["path longer than 2048", request({ actions: [action({ path: "/" + "a".repeat(2048) })] }), ["/actions/0/path"]],
  ["the request is a string", "plan", [""]],
  ["the request is null", null, [""]],
  ["the request is an array", [request()], [""]],
  [
    "several problems are all reported",
    { title: 1, actions: [action({ op: "nope" })], ttlSeconds: 0.5, bogus: true },
    ["/title", "/actions/0/op", "/ttlSeconds", "/bogus"],
  ],
];

describe("validate(PlanRequest)", () => {
  it.each(REFUSED)("refuses: %s", (_name, input, issuePaths, message) => {
    const err = refusal(input);
    expect(err.code).toBe("invalid_request");
    expect(err.message).toMatch(/^plan request /);
    expect(err.issues).toBeDefined();
    expect(err.issues!.map((i) => i.path).sort()).toEqual([...issuePaths].sort());
    for (const issue of err.issues!) expect(issue.message.length).toBeGreaterThan(0);
    if (message) expect(err.issues!.map((i) => i.message).join("\n")).toMatch(message);
  });

  it("passes a valid request with only title and actions", () => {
    const input = { title: "Raise credit limit", actions: [action()] };
    const parsed = validate(PlanRequest, input, "plan request");
    expect(parsed).toEqual(input);
  });

  it.each<[string, Record<string, unknown>]>([
    ["every optional field", request({ reason: "ticket #1", ttlSeconds: 600, onBehalfOf: "U024BE7LH", idempotencyKey: "k-1" })],
    ["an Enterprise Grid user id", request({ onBehalfOf: "W012A3CDE" })],
    [`exactly ${LIMITS.maxActions} actions`, request({ actions: manyActions(LIMITS.maxActions) })],
    [`a title of exactly ${LIMITS.maxTitle} characters`, request({ title: "x".repeat(LIMITS.maxTitle) })],
    ["delete without body", request({ actions: [withoutKey(action({ op: "delete" }), "body")] })],
    ["merge with a scalar body (RFC 7396 allows it)", request({ actions: [action({ body: "x" })] })],
    ["merge with a null body", request({ actions: [action({ body: null })] })],
    ["replace with an array body", request({ actions: [action({ op: "replace", body: [1, 2] })] })],
    ["create with an object body", request({ actions: [action({ op: "create", body: {} })] })],
    ["same path on two different targets", request({ actions: [action(), action({ target: "billing" })] })],
    ["nesting of exactly 32 levels", request({ actions: [action({ body: DEEPEST_ALLOWED_BODY })] })],
  ])("accepts %s", (_name, input) => {
    expect(() => validate(PlanRequest, input, "plan request")).not.toThrow();
  });

  it("trims the title", () => {
    expect(validate(PlanRequest, request({ title: "  Raise limit \n" }), "plan request").title).toBe("Raise limit");
  });

  it("names the thing validated in the message", () => {
    try {
      validate(PlanRequest, {}, "the widget");
      expect.unreachable();
    } catch (err) {
      expect((err as ServiceError).message).toMatch(/^the widget is not valid/);
    }
  });

  // One resource spelled two ways (RFC 3986 §6.2.2.2) is still one resource: the second write
  // would go stale and the plan would apply partially.
  it("refuses the same resource written twice with differently encoded paths", () => {
    const err = refusal(request({ actions: [action({ path: "/contacts/1" }), action({ path: "/contacts/%31" })] }));
    expect(err.issues!.map((i) => i.path)).toEqual(["/actions/1/path"]);
  });
});
