import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type * as Client from "../../../src/client/wire-types.ts";
import type * as Wire from "../../../src/contract/agent-api.ts";
import { CLIENT_WIRE_TYPES_PATH, clientWireTypesSource } from "../../../src/contract/client-types.ts";
import { printTypes } from "../../../src/contract/print-types.ts";

/** Identity of two types (mutual assignability would miss a dropped optional field). */
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
/** For types that reach the recursive JsonValue, which two aliases spell differently: assignable both ways, same keys. */
type Alike<A, B> = [A] extends [B] ? ([B] extends [A] ? Same<keyof A, keyof B> : false) : false;

// tsc fails here when the generated client types and the zod contract disagree.
const contract: [
  Same<Client.PlanStatus, Wire.PlanStatus>,
  Same<Client.ErrorCode, Wire.ErrorCode>,
  Same<Client.ErrorBody, Wire.ErrorBody>,
  Same<Client.Issue, Wire.Issue>,
  Same<Client.Approval, Wire.Approval>,
  Same<Client.Rejection, Wire.Rejection>,
  Same<Client.Actor, Wire.Actor>,
  Same<Client.AuditEvent, Wire.AuditEvent>,
  Same<Client.PlanEvents, Wire.PlanEvents>,
  Alike<Client.JsonValue, Wire.JsonValue>,
  Alike<Client.Change, Wire.Change>,
  Alike<Client.ActionPreview, Wire.ActionPreview>,
  Alike<Client.Outcome, Wire.Outcome>,
  Alike<Client.PlanDocument, Wire.PlanDocument>,
  Alike<Client.PlanView, Wire.PlanView>,
  Alike<Client.WebhookPayload, Wire.WebhookPayload>,
  // The request as parsed: its schema has no default or transform that changes a type, and
  // z.input would say `unknown` for a JSON body that the schema (and the client) say is JSON.
  Alike<Client.PlanRequest, Wire.PlanRequest>,
  Alike<Client.HttpJsonAction, Extract<Wire.PlanRequest["actions"][number], { kind: "http.json" }>>,
  Alike<Client.PostgresRowAction, Extract<Wire.PlanRequest["actions"][number], { kind: "postgres.row" }>>,
  Alike<Client.PlannedAction, Wire.PlannedAction>,
] = [true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true];

describe("the client's wire types", () => {
  it("are what `npm run gen:wire` makes from the contract now", () => {
    const committed = readFileSync(new URL(`../../../${CLIENT_WIRE_TYPES_PATH}`, import.meta.url), "utf8");
    expect(committed === clientWireTypesSource(), `${CLIENT_WIRE_TYPES_PATH} is out of date: run npm run gen:wire`).toBe(true);
    expect(contract.every(Boolean)).toBe(true);
  });
});

describe("printTypes", () => {
  const print = (schema: Record<string, unknown>) => printTypes({ T: schema }, "#/c/");

  it("prints objects with optional fields, records, literals, nullable values and references", () => {
    expect(
      print({
        type: "object",
        description: "A thing",
        properties: {
          id: { type: "integer", minimum: 1 },
          kind: { type: "string", const: "x" },
          tags: { type: "array", items: { anyOf: [{ type: "string" }, { type: "null" }] } },
          "odd-name": { $ref: "#/c/Other", description: "Points */ elsewhere" },
          meta: { type: "object", propertyNames: { type: "string" }, additionalProperties: {} },
        },
        required: ["id", "kind"],
        additionalProperties: false,
      }),
    ).toBe(
      `/** A thing */
export type T = {
  id: number;
  kind: "x";
  tags?: (string | null)[];
  /** Points *\\/ elsewhere */
  "odd-name"?: Other;
  meta?: {
    [key: string]: unknown;
  };
};
`,
    );
  });

  it("prints enums and unions, and leaves validation-only keywords (allOf of if/then) to the server", () => {
    expect(print({ type: "string", enum: ["a", "b"] })).toBe('export type T = "a" | "b";\n');
    expect(
      print({ oneOf: [{ type: "object", properties: { a: { type: "boolean" } }, required: ["a"], additionalProperties: false }, { type: "number" }] }),
    ).toBe("export type T = {\n  a: boolean;\n} | number;\n");
    expect(print({ type: "object", properties: {}, additionalProperties: false, allOf: [{ if: {}, then: {} }] })).toBe("export type T = {};\n");
  });

  it("refuses what it cannot type instead of widening it", () => {
    expect(() => print({ type: "array", prefixItems: [{ type: "string" }] })).toThrow(/no TypeScript form for the keyword 'prefixItems'/);
    expect(() => print({ $ref: "#/elsewhere/X" })).toThrow(/a \$ref outside #\/c\//);
    expect(() => print({ type: "tuple" })).toThrow(/unknown type "tuple"/);
  });
});
