import { describe, expect, it } from "vitest";
import { isJsonMediaType, readJsonBody } from "../../../src/http/json-body.ts";
import { ServiceError } from "../../../src/service/errors.ts";

const post = (body: string | Uint8Array, contentType?: string) =>
  new Request("http://countersign.test/v1/plans", { method: "POST", body, ...(contentType ? { headers: { "content-type": contentType } } : {}) });

async function refusal(promise: Promise<unknown>): Promise<ServiceError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof ServiceError) return err;
    throw err;
  }
  throw new Error("expected a refusal");
}

describe("isJsonMediaType", () => {
  it.each(["application/json", "application/json; charset=utf-8", "Application/JSON", " application/json ;x=y"])("accepts %j", (type) => {
    expect(isJsonMediaType(type)).toBe(true);
  });
  it.each([undefined, "", "text/plain", "application/jsonx", "application/json-patch+json", "application/x-www-form-urlencoded"])("refuses %j", (type) => {
    expect(isJsonMediaType(type)).toBe(false);
  });
});

describe("readJsonBody", () => {
  it("parses a JSON body", async () => {
    expect(await readJsonBody(post('{"a":[1.0,"x"]}', "application/json"), { what: "the body", requireJsonType: true })).toEqual({ a: [1, "x"] });
  });

  it("refuses another content type with 415's code when JSON is required, and only then", async () => {
    expect((await refusal(readJsonBody(post("{}", "text/plain"), { what: "the plan request", requireJsonType: true }))).code).toBe("unsupported_media_type");
    expect(await readJsonBody(post("{}", "text/plain"), { what: "the outcome" })).toEqual({});
  });

  it("refuses a body over the limit", async () => {
    expect((await refusal(readJsonBody(post("x".repeat(2048)), { what: "the body", maxBytes: 1024 }))).code).toBe("payload_too_large");
  });

  it("refuses broken JSON and bodies that are not UTF-8 as invalid_json", async () => {
    expect((await refusal(readJsonBody(post("{nope"), { what: "the body" }))).code).toBe("invalid_json");
    const err = await refusal(readJsonBody(post(new Uint8Array([0x22, 0xff, 0x22])), { what: "the body" }));
    expect(err).toMatchObject({ code: "invalid_json", message: "the body is not valid UTF-8" });
  });

  it("refuses an inexact number with its JSON Pointer", async () => {
    const err = await refusal(readJsonBody(post('{"actions":[{"body":{"n":12345678901234567890}}]}'), { what: "the plan request" }));
    expect(err.code).toBe("invalid_request");
    expect(err.issues).toEqual([{ path: "/actions/0/body/n", message: expect.stringContaining("cannot be held exactly") }]);
  });
});
