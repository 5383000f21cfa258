import { describe, expect, it } from "vitest";
import { AdapterError } from "../../../src/adapters/adapter.ts";
import { classifyHttpJsonError } from "../../../src/adapters/http-json-adapter.ts";
import { TargetReadError } from "../../../src/adapters/http-json.ts";
import { fromText, quoteIdent, readExpr, toText, whyNotForm, writeExpr, type Column } from "../../../src/adapters/postgres-row/column-types.ts";
import { classifyPostgresError } from "../../../src/adapters/postgres-row/postgres-row-adapter.ts";

const column = (type: string, declared = type, notNull = false): Column => ({ name: "c", type, declared, notNull, hasDefault: false, databaseSet: false });

describe("postgres.row column forms", () => {
  it("accepts exactly one JSON form per type", () => {
    const ok: [string, unknown][] = [
      ["bool", true],
      ["int2", -32768],
      ["int4", 2147483647],
      ["int8", "-9223372036854775808"],
      ["numeric", "12.50"],
      ["text", "é"],
      ["uuid", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"],
      ["date", "2026-12-03"],
      ["timestamptz", "2026-12-03T10:00:00.000001Z"],
      ["jsonb", { a: [1] }],
      ["bytea", "AP8Q"],
      ["numeric", "NaN"],
      ["numeric", "-Infinity"],
      ["date", "infinity"],
      ["date", "0044-03-15 BC"],
      ["date", "5874897-12-31"],
      ["timestamptz", "-infinity"],
      ["timestamptz", "0044-03-15T10:00:00.000000Z BC"],
      ["timestamptz", "294276-12-31T23:59:59.999999Z"],
    ];
    for (const [type, value] of ok) expect(whyNotForm(column(type), value as never), type).toBeUndefined();
    const bad: [string, unknown][] = [
      ["bool", "true"],
      ["int2", 32768],
      ["int4", 1.5],
      ["int8", 42],
      ["int8", "9223372036854775808"],
      ["numeric", "1e3"],
      ["numeric", 1.5],
      ["text", "a\u0000b"],
      ["uuid", "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11"],
      ["date", "2026-12-3"],
      ["timestamptz", "2026-12-03T10:00:00.000Z"],
      ["timestamptz", "2026-12-03T10:00:00.000001+01:00"],
      ["bytea", "AP8"],
      ["point", "(1,2)"],
      ["numeric", "nan"],
      ["numeric", "+Infinity"],
      ["int8", "NaN"],
      ["date", "0044-03-15 bc"],
      ["date", "02026-12-03"],
      ["date", "Infinity"],
      ["timestamptz", "0044-03-15T10:00:00.000000 BC"],
      ["timestamptz", "2026-12-03T10:00:00.000000Z AD"],
    ];
    for (const [type, value] of bad) expect(whyNotForm(column(type), value as never), `${type} ${JSON.stringify(value)}`).toMatch(/^column 'c' /);
  });

  it("null is allowed only where the column allows it", () => {
    expect(whyNotForm(column("text"), null)).toBeUndefined();
    expect(whyNotForm(column("text", "text", true), null)).toBe("column 'c' is NOT NULL");
  });

  it("moves every value as text, and reads timestamps and bytea in their one form", () => {
    expect(toText(column("int4"), 42)).toBe("42");
    expect(toText(column("jsonb"), { a: 1 })).toBe('{"a":1}');
    expect(toText(column("bool"), false)).toBe("false");
    expect(fromText(column("bool"), "false")).toBe(false);
    expect(fromText(column("int8"), "9007199254740993")).toBe("9007199254740993");
    expect(fromText(column("jsonb"), '{"n": 1.0}')).toEqual({ n: 1.0 });
    expect(readExpr(column("timestamptz"))).toBe(
      `CASE WHEN "c" = 'infinity' THEN 'infinity' WHEN "c" = '-infinity' THEN '-infinity' ELSE to_char("c" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') || CASE WHEN "c" < '0001-01-01T00:00:00Z' THEN ' BC' ELSE '' END END`,
    );
    expect(readExpr(column("date"))).not.toContain("::text");
    expect(writeExpr(column("bytea"), 3)).toBe("decode($3::text, 'base64')");
    expect(writeExpr(column("varchar", "character varying(40)"), 1)).toBe("$1::text::character varying(40)");
    expect(quoteIdent('a"b')).toBe('"a""b"');
  });
});

describe("error classes", () => {
  it("postgres: connection trouble, timeouts, serialization and deadlocks are transient; the rest permanent", () => {
    const pg = (code: string) => Object.assign(new Error(code), { code, severity: "ERROR" });
    expect(["08006", "40001", "40P01", "57014", "57P01", "53300"].map((c) => classifyPostgresError(pg(c)))).toEqual(Array(6).fill("transient"));
    expect(["42501", "23505", "22P02", "42P01"].map((c) => classifyPostgresError(pg(c)))).toEqual(Array(4).fill("permanent"));
    expect(classifyPostgresError(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }))).toBe("transient");
    expect(classifyPostgresError(new AdapterError("permanent", "t", "no such table"))).toBe("permanent");
  });

  it("http.json: no answer, 5xx, 408 and 429 are transient; what the target will say again is permanent", () => {
    expect(classifyHttpJsonError(new TargetReadError("t", "/x", "target 't' did not answer within 5 ms"))).toBe("transient");
    expect(classifyHttpJsonError(new TargetReadError("t", "/x", "target 't' answered HTTP 503", { status: 503, body: "" }))).toBe("transient");
    expect(classifyHttpJsonError(new TargetReadError("t", "/x", "target 't' answered HTTP 429", { status: 429, body: "" }))).toBe("transient");
    expect(classifyHttpJsonError(new TargetReadError("t", "/x", "target 't' answered HTTP 403", { status: 403, body: "" }))).toBe("permanent");
    expect(classifyHttpJsonError(new TargetReadError("t", "/x", "target 't' gave no ETag for /x"))).toBe("permanent");
  });
});
