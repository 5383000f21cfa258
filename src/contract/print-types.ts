import type { JsonSchema } from "./json-schema.ts";

/**
 * TypeScript declarations for JSON Schemas (draft 2020-12), limited to what zod's
 * `toJSONSchema` emits for the wire contract. A keyword it cannot turn into a type is an error,
 * not an `unknown`: a silently widened client type would be a contract nobody checks.
 * Validation-only keywords (pattern, format, bounds, `allOf` of if/then) have no TypeScript
 * form and are left to the server.
 */
export function printTypes(schemas: Record<string, JsonSchema>, refPrefix: string): string {
  return Object.entries(schemas)
    .map(([name, schema]) => `${docComment(schema, "")}export type ${name} = ${printType(schema, refPrefix, "")};\n`)
    .join("\n");
}

const TYPE_KEYWORDS = new Set(["$ref", "anyOf", "oneOf", "const", "enum", "type", "properties", "required", "additionalProperties", "items", "propertyNames"]);
/** Keywords that only narrow values, and `allOf` (here only if/then rules on a typed object). */
const VALIDATION_ONLY = new Set([
  "description",
  "pattern",
  "format",
  "minLength",
  "maxLength",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "minItems",
  "maxItems",
  "default",
  "allOf",
  "title",
  "examples",
]);

function printType(schema: JsonSchema, refPrefix: string, indent: string): string {
  for (const key of Object.keys(schema)) {
    if (!TYPE_KEYWORDS.has(key) && !VALIDATION_ONLY.has(key))
      throw new Error(`printTypes: no TypeScript form for the keyword '${key}' in ${JSON.stringify(schema).slice(0, 200)}`);
  }
  if (typeof schema.$ref === "string") {
    if (!schema.$ref.startsWith(refPrefix)) throw new Error(`printTypes: a $ref outside ${refPrefix}: ${schema.$ref}`);
    return schema.$ref.slice(refPrefix.length);
  }
  if ("const" in schema) return JSON.stringify(schema.const);
  if (Array.isArray(schema.enum)) return schema.enum.map((v) => JSON.stringify(v)).join(" | ");
  const union = (schema.anyOf ?? schema.oneOf) as JsonSchema[] | undefined;
  if (union) return union.map((s) => parenthesize(printType(s, refPrefix, indent))).join(" | ");
  const type = schema.type;
  if (Array.isArray(type)) return type.map((t) => printType({ ...schema, type: t }, refPrefix, indent)).join(" | ");
  switch (type) {
    case undefined:
      if (Object.keys(schema).every((k) => VALIDATION_ONLY.has(k))) return "unknown";
      throw new Error(`printTypes: a schema without a type: ${JSON.stringify(schema).slice(0, 200)}`);
    case "string":
      return "string";
    case "number":
    case "integer":
      return "number";
    case "boolean":
      return "boolean";
    case "null":
      return "null";
    case "array":
      return `${parenthesize(schema.items === undefined ? "unknown" : printType(schema.items as JsonSchema, refPrefix, indent))}[]`;
    case "object":
      return printObject(schema, refPrefix, indent);
    default:
      throw new Error(`printTypes: unknown type ${JSON.stringify(type)}`);
  }
}

function printObject(schema: JsonSchema, refPrefix: string, indent: string): string {
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((schema.required ?? []) as string[]);
  const inner = indent + "  ";
  const lines = Object.entries(properties).map(
    ([name, property]) =>
      `${docComment(property, inner)}${inner}${propertyKey(name)}${required.has(name) ? "" : "?"}: ${printType(property, refPrefix, inner)};\n`,
  );
  const rest = schema.additionalProperties;
  if (rest !== false) {
    const value = rest === undefined || rest === true ? "unknown" : printType(rest as JsonSchema, refPrefix, inner);
    lines.push(`${inner}[key: string]: ${value};\n`);
  }
  return lines.length === 0 ? "{}" : `{\n${lines.join("")}${indent}}`;
}

/** Wraps a union in parentheses, so that `[]` or another `|` applies to all of it. */
function parenthesize(type: string): string {
  let depth = 0;
  let quoted = false;
  for (let i = 0; i < type.length; i++) {
    const c = type[i]!;
    if (quoted) {
      if (c === "\\") i++;
      else if (c === '"') quoted = false;
    } else if (c === '"') quoted = true;
    else if ("{([".includes(c)) depth++;
    else if ("})]".includes(c)) depth--;
    else if (c === "|" && depth === 0) return `(${type})`;
  }
  return type;
}

function propertyKey(name: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(name) ? name : JSON.stringify(name);
}

function docComment(schema: JsonSchema, indent: string): string {
  const text = typeof schema.description === "string" ? schema.description : undefined;
  if (!text) return "";
  return `${indent}/** ${text.replaceAll("*/", "*\\/")} */\n`;
}
