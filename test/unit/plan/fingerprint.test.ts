import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { canonicalJson, fingerprint, SHA256_PATTERN, shortHash } from "../../../src/plan/fingerprint.ts";
import { PlanDocument, type HttpJsonPlanned } from "../../../src/plan/schema.ts";

const sha256Hex = (text: string): string => createHash("sha256").update(Buffer.from(text, "utf8")).digest("hex");

/** Rebuilds every object with its keys in reverse insertion order, at every depth. */
function reverseKeysDeep(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reverseKeysDeep);
  if (typeof value === "object" && value !== null) {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).reverse()) out[key] = reverseKeysDeep((value as Record<string, unknown>)[key]);
    return out;
  }
  return value;
}

/** Rebuilds every object with its keys rotated by one, at every depth (another permutation than reverse). */
function rotateKeysDeep(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rotateKeysDeep);
  if (typeof value === "object" && value !== null) {
    const keys = Object.keys(value);
    const rotated = [...keys.slice(1), ...keys.slice(0, 1)];
    const out: Record<string, unknown> = {};
    for (const key of rotated) out[key] = rotateKeysDeep((value as Record<string, unknown>)[key]);
    return out;
  }
  return value;
}

const DIGEST_A = `sha256:${"a".repeat(64)}`;
const DIGEST_B = `sha256:${"b".repeat(64)}`;
const DIGEST_C = `sha256:${"c".repeat(64)}`;

/** A plan document of http.json actions only, as every stored plan was before postgres.row. */
type HttpJsonDocument = Omit<PlanDocument, "actions"> & { actions: HttpJsonPlanned[] };

function planDocument(): HttpJsonDocument {
  return {
    v: 1,
    id: "6f1c1b1e-8a4b-4c39-9f2e-2d9a7c3e5b10",
    environment: "production",
    agent: "billing-bot",
    title: "Raise credit limit for ACME",
    reason: "Customer asked on ticket #4411",
    onBehalfOf: "U0ALICE",
    actions: [
      {
        kind: "http.json",
        target: "crm",
        path: "/contacts/1",
        op: "merge",
        body: { creditLimit: 5000, tags: ["vip", "net30"], address: { city: "Berlin", zip: "10115" } },
        precondition: { etag: 'W/"41"' },
        beforeDigest: DIGEST_A,
        afterDigest: DIGEST_B,
      },
      {
        kind: "http.json",
        target: "crm",
        path: "/contacts/2",
        op: "delete",
        precondition: { etag: 'W/"7"' },
        beforeDigest: DIGEST_B,
        afterDigest: DIGEST_C,
      },
    ],
    policy: { approvers: ["U0BOB", "U0CAROL"], requiredApprovals: 1, grantTtlSeconds: 600 },
    expiresAt: "2026-12-02T12:15:00.000Z",
  };
}

type Mutation = [name: string, mutate: (doc: HttpJsonDocument) => void];

// `kind` is a literal in the type; the fingerprint must still see a different value.
const loose = (x: object): Record<string, unknown> => x as Record<string, unknown>;

const EFFECT_MUTATIONS: Mutation[] = [
  [
    "v",
    (d) => {
      loose(d).v = 2;
    },
  ],
  [
    "id",
    (d) => {
      d.id = "6f1c1b1e-8a4b-4c39-9f2e-2d9a7c3e5b11";
    },
  ],
  [
    "environment",
    (d) => {
      d.environment = "staging";
    },
  ],
  [
    "agent",
    (d) => {
      d.agent = "billing-bot-2";
    },
  ],
  [
    "title",
    (d) => {
      d.title = "Raise credit limit for ACME!";
    },
  ],
  [
    "title (whitespace only)",
    (d) => {
      d.title = d.title + " ";
    },
  ],
  [
    "reason changed",
    (d) => {
      d.reason = "Customer asked on ticket #4412";
    },
  ],
  [
    "reason removed",
    (d) => {
      delete d.reason;
    },
  ],
  [
    "reason emptied",
    (d) => {
      d.reason = "";
    },
  ],
  [
    "onBehalfOf changed",
    (d) => {
      d.onBehalfOf = "U0DAVE";
    },
  ],
  [
    "onBehalfOf removed",
    (d) => {
      delete d.onBehalfOf;
    },
  ],
  [
    "actions[0].kind",
    (d) => {
      loose(d.actions[0]!).kind = "http.xml";
    },
  ],
  [
    "actions[0].target",
    (d) => {
      d.actions[0]!.target = "crm-eu";
    },
  ],
  [
    "actions[0].path",
    (d) => {
      d.actions[0]!.path = "/contacts/10";
    },
  ],
  [
    "actions[0].op",
    (d) => {
      d.actions[0]!.op = "replace";
    },
  ],
  [
    "actions[0].body top-level value",
    (d) => {
      d.actions[0]!.body = { ...(d.actions[0]!.body as object), creditLimit: 5001 };
    },
  ],
  [
    'actions[0].body number type (5000 vs "5000")',
    (d) => {
      d.actions[0]!.body = { ...(d.actions[0]!.body as object), creditLimit: "5000" };
    },
  ],
  [
    "actions[0].body nested value",
    (d) => {
      (d.actions[0]!.body as { address: { zip: string } }).address.zip = "10117";
    },
  ],
  [
    "actions[0].body array order",
    (d) => {
      (d.actions[0]!.body as { tags: string[] }).tags.reverse();
    },
  ],
  [
    "actions[0].body null member added",
    (d) => {
      (d.actions[0]!.body as Record<string, unknown>).note = null;
    },
  ],
  [
    "actions[0].body removed",
    (d) => {
      delete d.actions[0]!.body;
    },
  ],
  [
    "actions[1].body added",
    (d) => {
      d.actions[1]!.body = {};
    },
  ],
  [
    "actions[0].precondition etag",
    (d) => {
      d.actions[0]!.precondition = { etag: 'W/"42"' };
    },
  ],
  [
    "actions[0].precondition kind",
    (d) => {
      d.actions[0]!.precondition = { absent: true };
    },
  ],
  [
    "actions[0].beforeDigest",
    (d) => {
      d.actions[0]!.beforeDigest = DIGEST_C;
    },
  ],
  [
    "actions[0].afterDigest",
    (d) => {
      d.actions[0]!.afterDigest = DIGEST_C;
    },
  ],
  [
    "actions[1].op",
    (d) => {
      d.actions[1]!.op = "create";
    },
  ],
  [
    "actions[1].precondition",
    (d) => {
      d.actions[1]!.precondition = { etag: 'W/"8"' };
    },
  ],
  [
    "actions order",
    (d) => {
      d.actions.reverse();
    },
  ],
  [
    "actions: one removed",
    (d) => {
      d.actions.pop();
    },
  ],
  [
    "actions: one duplicated",
    (d) => {
      d.actions.push(structuredClone(d.actions[0]!));
    },
  ],
  [
    "policy.approvers: one added",
    (d) => {
      d.policy.approvers.push("U0DAVE");
    },
  ],
  [
    "policy.approvers: one removed",
    (d) => {
      d.policy.approvers.pop();
    },
  ],
  [
    "policy.approvers: one replaced",
    (d) => {
      d.policy.approvers[0] = "U0EVE";
    },
  ],
  [
    "policy.requiredApprovals",
    (d) => {
      d.policy.requiredApprovals = 2;
    },
  ],
  [
    "policy.grantTtlSeconds",
    (d) => {
      d.policy.grantTtlSeconds = 601;
    },
  ],
  [
    "expiresAt (+1 s)",
    (d) => {
      d.expiresAt = "2026-12-02T12:15:01.000Z";
    },
  ],
  [
    "expiresAt (+1 ms)",
    (d) => {
      d.expiresAt = "2026-12-02T12:15:00.001Z";
    },
  ],
  [
    "unknown extra top-level field",
    (d) => {
      loose(d).extra = true;
    },
  ],
];

describe("canonicalJson (RFC 8785)", () => {
  it.each<[string, unknown, string]>([
    ["keys sorted", { b: 1, a: 2, c: 3 }, '{"a":2,"b":1,"c":3}'],
    ["nested keys sorted, arrays kept in order", { z: [3, 1, 2], a: { y: true, x: null } }, '{"a":{"x":null,"y":true},"z":[3,1,2]}'],
    ["no whitespace", { a: [1, { b: "c" }] }, '{"a":[1,{"b":"c"}]}'],
    ["undefined members are dropped", { a: undefined, b: 1 }, '{"b":1}'],
    ["empty containers", { a: {}, b: [] }, '{"a":{},"b":[]}'],
    ["top-level scalars", "x", '"x"'],
    ["top-level null", null, "null"],
    ["top-level array", [true, false, null], "[true,false,null]"],
  ])("%s", (_name, value, expected) => {
    expect(canonicalJson(value)).toBe(expected);
  });

  it("matches the RFC 8785 §3.2.2 example (numbers, string escapes, literals)", () => {
    const input = JSON.parse(
      '{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],' +
        '"string":"\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/",' +
        '"literals":[null,true,false]}',
    );
    expect(canonicalJson(input)).toBe(
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],' + '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    );
  });

  it("sorts keys by UTF-16 code units as in the RFC 8785 §3.2.3 example", () => {
    const input = JSON.parse(
      '{"\\u20ac":"Euro Sign","\\r":"Carriage Return","\\ufb33":"Hebrew Letter Dalet With Dagesh",' +
        '"1":"One","\\ud83d\\ude00":"Emoji: Grinning Face","\\u0080":"Control",' +
        '"\\u00f6":"Latin Small Letter O With Diaeresis"}',
    );
    const keys = Object.keys(JSON.parse(canonicalJson(input)) as object);
    // Object.keys would put "1" first (integer-like); read the order from the text instead.
    const order = [...canonicalJson(input).matchAll(/"([^"]*)":"([^"]*)"/g)].map((m) => m[2]);
    expect(order).toEqual([
      "Carriage Return",
      "One",
      "Control",
      "Latin Small Letter O With Diaeresis",
      "Euro Sign",
      "Emoji: Grinning Face",
      "Hebrew Letter Dalet With Dagesh",
    ]);
    expect(keys).toHaveLength(7);
  });

  it.each<[string, number, string]>([
    ["zero", 0, "0"],
    ["negative zero", -0, "0"],
    ["1.0 parsed", JSON.parse("1.0") as number, "1"],
    ["1e0 parsed", JSON.parse("1e0") as number, "1"],
    ["4.50", 4.5, "4.5"],
    ["1e21", 1e21, "1e+21"],
    ["1e20 (still plain)", 1e20, "100000000000000000000"],
    ["1e-7", 1e-7, "1e-7"],
    ["0.000001 (still plain)", 0.000001, "0.000001"],
    ["max safe integer", 9007199254740991, "9007199254740991"],
    ["smallest subnormal", 5e-324, "5e-324"],
    ["largest double", 1.7976931348623157e308, "1.7976931348623157e+308"],
    ["negative largest double", -1.7976931348623157e308, "-1.7976931348623157e+308"],
    ["0.1 + 0.2 shortest round-trip", 0.1 + 0.2, "0.30000000000000004"],
  ])("formats number %s as %s", (_name, value, expected) => {
    expect(canonicalJson(value)).toBe(expected);
    expect(canonicalJson({ n: value })).toBe(`{"n":${expected}}`);
  });

  it.each<[string, string, string]>([
    ["non-ASCII stays raw UTF-8", "é", '"é"'],
    ["astral stays raw", "😀", '"😀"'],
    ["control characters use lower-case \\u escapes", "\u000f", '"\\u000f"'],
    ["short escapes for \\n \\t \\b \\f \\r", "\n\t\b\f\r", '"\\n\\t\\b\\f\\r"'],
    ["quote and backslash escaped", '"\\', '"\\"\\\\"'],
    ["solidus not escaped", "/", '"/"'],
    ["U+2028 stays raw", "\u2028", '"\u2028"'],
    ["DEL stays raw", "\u007f", '"\u007f"'],
  ])("string: %s", (_name, value, expected) => {
    expect(canonicalJson(value)).toBe(expected);
  });

  it.each<[string, unknown]>([
    ["undefined", undefined],
    ["NaN", Number.NaN],
    ["Infinity", Number.POSITIVE_INFINITY],
    ["-Infinity inside an object", { a: Number.NEGATIVE_INFINITY }],
    ["a lone surrogate", "\ud800"],
    ["a lone surrogate inside an array", ["ok", "\udc00"]],
  ])("refuses %s", (_name, value) => {
    expect(() => canonicalJson(value)).toThrow();
    expect(() => fingerprint(value)).toThrow();
  });

  it("refuses a circular structure", () => {
    const a: Record<string, unknown> = { x: 1 };
    a.self = a;
    expect(() => canonicalJson(a)).toThrow(/Circular/);
  });
});

describe("fingerprint", () => {
  it.each<[string, unknown]>([
    ["an object", { a: 1 }],
    ["an array", [1, 2, 3]],
    ["a string", "hello"],
    ["null", null],
    ["a plan document", planDocument()],
  ])("has the form sha256:<64 lower-case hex> for %s", (_name, value) => {
    const hash = fingerprint(value);
    expect(hash).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(hash).toMatch(SHA256_PATTERN);
  });

  it("matches a fixed known vector: {} hashes to sha256('{}')", () => {
    expect(fingerprint({})).toBe("sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a");
  });

  it("is sha256 over a hand-written canonical string (independent node:crypto computation)", () => {
    const value = { c: { e: 1.5, d: "é" }, b: 1.0, a: [true, null, "x"] };
    const handWritten = '{"a":[true,null,"x"],"b":1,"c":{"d":"é","e":1.5}}';
    expect(canonicalJson(value)).toBe(handWritten);
    expect(fingerprint(value)).toBe(`sha256:${sha256Hex(handWritten)}`);
  });

  it("hashes the UTF-8 bytes of the canonical form", () => {
    expect(fingerprint("é")).toBe(
      `sha256:${createHash("sha256")
        .update(Buffer.from([0x22, 0xc3, 0xa9, 0x22]))
        .digest("hex")}`,
    );
  });

  it("is sha256 of canonicalJson for a full plan document", () => {
    const doc = planDocument();
    expect(fingerprint(doc)).toBe(`sha256:${sha256Hex(canonicalJson(doc))}`);
  });

  it.each<[string, string, string]>([
    ["1.0 vs 1", "1.0", "1"],
    ["1e0 vs 1", "1e0", "1"],
    ["1E0 vs 1.00", "1E0", "1.00"],
    ["100 vs 1e2", "100", "1e2"],
    ["0.5 vs 5e-1", "0.5", "5e-1"],
    ["-0 vs 0", "-0", "0"],
    ["-0.0 vs 0", "-0.0", "0"],
  ])("number formatting does not change the hash: %s", (_name, a, b) => {
    expect(fingerprint(JSON.parse(`{"n":${a}}`))).toBe(fingerprint(JSON.parse(`{"n":${b}}`)));
  });

  it.each<[string, string, string]>([
    ["flat", '{"a":1,"b":2}', '{"b":2,"a":1}'],
    ["nested", '{"x":{"p":1,"q":[{"m":1,"n":2}]},"y":0}', '{ "y" : 0 , "x" : { "q" : [ { "n" : 2 , "m" : 1 } ] , "p" : 1 } }'],
    ["escaped vs raw unicode", '{"k":"\\u00e9"}', '{"k":"é"}'],
    ["escaped vs raw solidus", '{"k":"a\\/b"}', '{"k":"a/b"}'],
    ["escaped vs raw key", '{"\\u0061":1}', '{"a":1}'],
  ])("key order, whitespace and escaping do not change the hash (%s)", (_name, a, b) => {
    expect(fingerprint(JSON.parse(a))).toBe(fingerprint(JSON.parse(b)));
  });

  it.each<[string, unknown, unknown]>([
    ['1 vs "1"', 1, "1"],
    ["null vs absent member", { a: null }, {}],
    ["false vs null", false, null],
    ["[] vs {}", [], {}],
    ["array order", [1, 2], [2, 1]],
    ["composed é vs decomposed e + U+0301 (JCS does not normalize Unicode)", "\u00e9", "e\u0301"],
    ["key case", { a: 1 }, { A: 1 }],
    ["nested vs flat", { a: { b: 1 } }, { "a.b": 1 }],
  ])("different values give different hashes: %s", (_name, a, b) => {
    expect(fingerprint(a)).not.toBe(fingerprint(b));
  });

  it("an undefined member hashes like an absent one", () => {
    expect(fingerprint({ a: 1, reason: undefined })).toBe(fingerprint({ a: 1 }));
  });

  describe("plan document", () => {
    const base = planDocument();
    const baseHash = fingerprint(base);

    it("the fixture is a valid PlanDocument and parsing does not change its hash", () => {
      const parsed = PlanDocument.parse(base);
      expect(fingerprint(parsed)).toBe(baseHash);
    });

    it("an http.json plan hashes exactly as before actions became a union over adapters (issue 17)", () => {
      // Computed with src/plan/schema.ts at 4c2a13e, when PlannedAction was http.json's alone: a
      // plan stored (and approved, and granted) then must verify against the same hash now.
      const before = "sha256:c1c68ad58ccb81acbaecf36b26fd43b2d5a23cc62816f3d5f83f0e4e742c71dd";
      expect(baseHash).toBe(before);
      expect(fingerprint(PlanDocument.parse(base))).toBe(before);
    });

    it("is deterministic across copies", () => {
      expect(fingerprint(structuredClone(base))).toBe(baseHash);
      expect(fingerprint(JSON.parse(JSON.stringify(base)))).toBe(baseHash);
    });

    it.each(EFFECT_MUTATIONS)("changes when %s changes", (_name, mutate) => {
      const doc = structuredClone(base);
      mutate(doc);
      expect(JSON.stringify(doc)).not.toBe(JSON.stringify(base));
      expect(fingerprint(doc)).not.toBe(baseHash);
    });

    it("every mutation gives a distinct hash", () => {
      const hashes = EFFECT_MUTATIONS.map(([, mutate]) => {
        const doc = structuredClone(base);
        mutate(doc);
        return fingerprint(doc);
      });
      expect(new Set([baseHash, ...hashes]).size).toBe(hashes.length + 1);
    });

    it.each<[string, (v: unknown) => unknown]>([
      ["reversed at every depth", reverseKeysDeep],
      ["rotated at every depth", rotateKeysDeep],
      ["reversed then rotated", (v) => rotateKeysDeep(reverseKeysDeep(v))],
    ])("does not change when JSON key order is shuffled (%s)", (_name, shuffle) => {
      const shuffled = shuffle(base);
      // The shuffle really reordered keys, deep inside the action body too.
      expect(JSON.stringify(shuffled)).not.toBe(JSON.stringify(base));
      const body = (shuffled as HttpJsonDocument).actions[0]!.body as Record<string, unknown>;
      expect(Object.keys(body)).not.toEqual(Object.keys(base.actions[0]!.body as object));
      expect(Object.keys(shuffled as object)).not.toEqual(Object.keys(base));
      expect(fingerprint(shuffled)).toBe(baseHash);
    });

    it("does not change when the document is re-serialized with different whitespace", () => {
      expect(fingerprint(JSON.parse(JSON.stringify(base, null, 2)))).toBe(baseHash);
    });
  });
});

describe("shortHash", () => {
  it.each<[string, string]>([
    [`sha256:${"0123456789abcdef".repeat(4)}`, "0123456789ab"],
    ["0123456789abcdef", "0123456789ab"],
    ["sha256:abc", "abc"],
  ])("%s → %s", (input, expected) => {
    expect(shortHash(input)).toBe(expected);
  });
});
