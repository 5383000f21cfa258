import { parseHashableJson } from "../../plan/faithful-json.ts";
import type { Json } from "../../plan/json.ts";

/**
 * The one JSON form of each column type postgres.row reads and writes. Every value travels as
 * text (read by readExpr, written as a text parameter cast in SQL), so nothing goes through
 * a JS Number or Date on the way: int8 and numeric are decimal strings, timestamptz is ISO-8601
 * in UTC with microseconds, bytea is base64. Every value a column of these types holds has a
 * form that PostgreSQL parses back to it (numeric "NaN", dates "infinity" and "0044-03-15 BC");
 * only jsonb numbers a double cannot hold are refused when read. Other types are refused by name.
 */
export type JsonForm = "boolean" | "integer" | "decimal" | "string" | "uuid" | "date" | "timestamp" | "json" | "base64";

const FORMS: Record<string, JsonForm> = {
  bool: "boolean",
  int2: "integer",
  int4: "integer",
  int8: "decimal",
  numeric: "decimal",
  text: "string",
  varchar: "string",
  uuid: "uuid",
  date: "date",
  timestamptz: "timestamp",
  jsonb: "json",
  bytea: "base64",
};

export const SUPPORTED_TYPES = Object.keys(FORMS);

/** A column as the catalogue describes it. */
export interface Column {
  name: string;
  /** pg_type.typname of the column's type. */
  type: string;
  /** format_type(atttypid, atttypmod), e.g. "character varying(40)", "numeric(10,2)"; from the catalogue, never from an agent. */
  declared: string;
  notNull: boolean;
  hasDefault: boolean;
  /** Generated or identity ALWAYS: the database sets it, nobody writes it. */
  databaseSet: boolean;
}

export function formOf(column: Column): JsonForm | undefined {
  return Object.hasOwn(FORMS, column.type) ? FORMS[column.type] : undefined;
}

/** Double-quoted, with quotes doubled: only ever applied to names checked against the config and the catalogue. */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/**
 * The SQL expression that reads a column as its JSON form's text. Dates and times are spelled
 * out, never `::text`, which follows the session's DateStyle; to_char gives NULL for infinity and
 * drops the era, and for a date past 294276 AD it fails, so those are handled apart.
 */
export function readExpr(column: Column, ref = quoteIdent(column.name)): string {
  const infinite = (finite: string) => `CASE WHEN ${ref} = 'infinity' THEN 'infinity' WHEN ${ref} = '-infinity' THEN '-infinity' ELSE ${finite} END`;
  switch (formOf(column)) {
    case "date":
      return infinite(
        `to_char(abs(extract(year FROM ${ref})), 'FM9990000') || '-' || to_char(extract(month FROM ${ref}), 'FM00') || '-' || to_char(extract(day FROM ${ref}), 'FM00')` +
          ` || CASE WHEN extract(year FROM ${ref}) < 0 THEN ' BC' ELSE '' END`,
      );
    case "timestamp":
      return infinite(
        `to_char(${ref} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') || CASE WHEN ${ref} < '0001-01-01T00:00:00Z' THEN ' BC' ELSE '' END`,
      );
    case "base64":
      return `translate(encode(${ref}, 'base64'), E'\\n', '')`;
    default:
      return `${ref}::text`;
  }
}

/** The SQL expression that turns text parameter `$n` into the column's type (its declared type, typmod included). */
export function writeExpr(column: Column, n: number, declared = column.declared): string {
  if (formOf(column) === "base64") return `decode($${n}::text, 'base64')`;
  return `$${n}::text::${declared}`;
}

/** A value a row holds that its column's JSON form cannot show exactly: reading the row again does not help. */
export class UnreadableValue extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UnreadableValue";
  }
}

/** The column's text as read, back to its JSON form. */
export function fromText(column: Column, text: string | null): Json {
  if (text === null) return null;
  switch (formOf(column)) {
    case "boolean":
      return text === "true";
    case "integer":
      return Number(text);
    case "json": {
      const parsed = parseHashableJson(text);
      if (!parsed.ok)
        throw new UnreadableValue(
          `column '${column.name}' (${column.declared}) holds JSON that cannot be shown exactly${parsed.kind === "value" ? ` (at '${parsed.pointer}')` : ""}: ${parsed.message}`,
        );
      return parsed.value;
    }
    default:
      return text;
  }
}

const INT_RANGE: Record<string, [number, number]> = { int2: [-32768, 32767], int4: [-2147483648, 2147483647] };
const INT8_MIN = -(2n ** 63n);
const INT8_MAX = 2n ** 63n - 1n;
/** Years of four digits or more (a date reaches 5874897 AD, a timestamp 294276 AD), as readExpr spells them. */
const DATE_FORM = /^((\d{4}|[1-9]\d{4,6})-\d{2}-\d{2}( BC)?|-?infinity)$/;
const TIMESTAMP_FORM = /^((\d{4}|[1-9]\d{4,5})-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z( BC)?|-?infinity)$/;

/**
 * Why `value` is not the JSON form of `column` (naming the column and the form wanted), or
 * undefined when it is. Pure: the database checks the rest (dates that do not exist, lengths,
 * precision) when the preview canonicalizes the values.
 */
export function whyNotForm(column: Column, value: Json): string | undefined {
  const form = formOf(column);
  const name = `column '${column.name}'`;
  if (!form) return `${name} has type ${column.declared}, which postgres.row does not read or write (supported: ${SUPPORTED_TYPES.join(", ")})`;
  if (value === null) return column.notNull ? `${name} is NOT NULL` : undefined;
  const want = (what: string) => `${name} (${column.declared}) takes ${what}, not ${JSON.stringify(value).slice(0, 60)}`;
  switch (form) {
    case "boolean":
      return typeof value === "boolean" ? undefined : want("true or false");
    case "integer": {
      const [min, max] = INT_RANGE[column.type]!;
      return typeof value === "number" && Number.isInteger(value) && value >= min && value <= max ? undefined : want(`an integer from ${min} to ${max}`);
    }
    case "decimal": {
      const ok =
        typeof value === "string" &&
        (column.type === "int8"
          ? /^-?(0|[1-9]\d*)$/.test(value) && BigInt(value) >= INT8_MIN && BigInt(value) <= INT8_MAX
          : /^(-?(0|[1-9]\d*)(\.\d+)?|NaN|-?Infinity)$/.test(value));
      return ok
        ? undefined
        : want(
            column.type === "int8"
              ? `a decimal string such as "42" (int8 is a string, so no digit is lost)`
              : `a decimal string such as "12.50", or "NaN", "Infinity", "-Infinity"`,
          );
    }
    case "string":
      return typeof value === "string" && !value.includes("\u0000") ? undefined : want("a string without NUL characters");
    case "uuid":
      return typeof value === "string" && /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(value) ? undefined : want("a lower-case UUID");
    case "date":
      return typeof value === "string" && DATE_FORM.test(value)
        ? undefined
        : want(`a date such as "2026-12-03" (" BC" after it for a year before 1), or "infinity", "-infinity"`);
    case "timestamp":
      return typeof value === "string" && TIMESTAMP_FORM.test(value)
        ? undefined
        : want(`an ISO-8601 UTC time with microseconds such as "2026-12-03T11:00:00.000000Z" (" BC" after it for a year before 1), or "infinity", "-infinity"`);
    case "json":
      return undefined;
    case "base64":
      return typeof value === "string" && value.length % 4 === 0 && /^[A-Za-z0-9+/]*={0,2}$/.test(value) ? undefined : want("base64 (RFC 4648, padded)");
  }
}

/** A JSON-form value as the text parameter its writeExpr casts. */
export function toText(column: Column, value: Json): string | null {
  if (value === null) return null;
  if (formOf(column) === "json") return JSON.stringify(value);
  return typeof value === "string" ? value : String(value);
}
