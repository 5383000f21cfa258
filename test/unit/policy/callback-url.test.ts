import { describe, expect, it } from "vitest";
import { whyCallbackRefused } from "../../../src/policy/callback-url.ts";

describe("whyCallbackRefused", () => {
  it("allows a listed host", () => {
    expect(whyCallbackRefused("https://hooks.example.com/cs", ["hooks.example.com"])).toBeUndefined();
    expect(whyCallbackRefused("https://a.example.com/cs", ["*.example.com"])).toBeUndefined();
  });

  it("refuses an unlisted host, and the apex for a wildcard", () => {
    expect(whyCallbackRefused("https://evil.test/cs", ["hooks.example.com"])).toMatch(/not in webhooks.allowedHosts/);
    expect(whyCallbackRefused("https://example.com/cs", ["*.example.com"])).toMatch(/not in webhooks.allowedHosts/);
  });

  it.each(["https://alice:hunter2@hooks.example.com/cs", "https://hunter2@hooks.example.com/cs", "https://:hunter2@hooks.example.com/cs"])(
    "refuses credentials in %s, even for a listed host",
    (url) => {
      const why = whyCallbackRefused(url, ["hooks.example.com"]);
      expect(why).toMatch(/credentials/);
      expect(why).not.toContain("hunter2");
    },
  );
});
