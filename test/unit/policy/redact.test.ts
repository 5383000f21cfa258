import { describe, expect, it } from "vitest";
import { isSecretField, MASK, redactChange, redactionRules, redactJson, redactText } from "../../../src/policy/redact.ts";

const rules = redactionRules(["iban"]);

describe("secret fields", () => {
  it.each([
    ["password", true],
    ["Password", true],
    ["db_password", true],
    ["api_key", true],
    ["apiKey", true],
    ["X-Api-Key", true],
    ["authorization", true],
    ["Authorization", true],
    ["private_key", true],
    ["client_secret", true],
    ["refreshToken", true],
    ["IBAN", true], // configured
    ["email", false],
    ["name", false],
    ["tier", false],
    ["description", false],
    ["", false],
  ] as const)("%s → %s", (name, secret) => {
    expect(isSecretField(name, rules)).toBe(secret);
  });
});

describe("credential-looking values", () => {
  it.each([
    ["a Slack bot token", "token is xoxb-123456789012-abcdefghijkl here"],
    ["an AWS access key", "AKIAIOSFODNN7EXAMPLE"],
    ["a GitHub token", "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"],
    ["an OpenAI key", "sk-proj-abcdefghijklmnopqrstuvwxyz0123"],
    ["a JWT", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"],
    ["a PEM private key", "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg\n-----END PRIVATE KEY-----"],
    ["a Countersign agent key", "csk_" + "a".repeat(43)],
  ])("masks %s inside any string", (_name, text) => {
    const masked = redactText(text);
    expect(masked).toContain(MASK);
    expect(masked).not.toMatch(/xoxb-1|AKIAIOS|ghp_0|sk-proj-a|eyJzdWIi|MIIEvQ|csk_aaaa/);
  });

  it("leaves ordinary text alone", () => {
    for (const text of ["ana@new.example", "Customer asked by phone, ticket 4411", "sk-short", "AKIA"]) expect(redactText(text)).toBe(text);
  });
});

describe("redactJson and redactChange", () => {
  it("masks secret fields at any depth and credentials anywhere, keeping the shape", () => {
    const value = {
      name: "Ana",
      password: "hunter2",
      nested: { api_key: "k", list: [{ token: "t" }, "xoxb-123456789012-abcdefghijkl"] },
      nothing: { secret: null },
    };
    expect(redactJson(value, rules)).toEqual({
      name: "Ana",
      password: MASK,
      nested: { api_key: MASK, list: [{ token: MASK }, MASK] },
      nothing: { secret: null },
    });
    expect(value.password).toBe("hunter2"); // a copy, never a mutation
  });

  it("a secret field's change is still listed, with both sides masked", () => {
    expect(redactChange({ path: "/password", from: "old-pass", to: "new-pass" }, rules)).toEqual({ path: "/password", from: MASK, to: MASK });
    expect(redactChange({ path: "/credentials/0/value", to: "x" }, rules)).toEqual({ path: "/credentials/0/value", to: MASK });
    expect(redactChange({ path: "/email", from: "a@x", to: "b@x" }, rules)).toEqual({ path: "/email", from: "a@x", to: "b@x" });
    expect(redactChange({ path: "/note", to: "key AKIAIOSFODNN7EXAMPLE" }, rules)).toEqual({ path: "/note", to: `key ${MASK}` });
  });
});
