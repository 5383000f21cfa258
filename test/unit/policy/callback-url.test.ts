import { describe, expect, it } from "vitest";
import { parseAllowedHost, whyCallbackRefused } from "../../../src/policy/callback-url.ts";

describe("whyCallbackRefused", () => {
  it("allows a listed host", () => {
    expect(whyCallbackRefused("https://hooks.example.com/cs", ["hooks.example.com"])).toBeUndefined();
    expect(whyCallbackRefused("https://a.example.com/cs", ["*.example.com"])).toBeUndefined();
  });

  it("refuses an unlisted host, and the apex for a wildcard", () => {
    expect(whyCallbackRefused("https://evil.test/cs", ["hooks.example.com"])).toMatch(/not in webhooks.allowedHosts/);
    expect(whyCallbackRefused("https://example.com/cs", ["*.example.com"])).toMatch(/not in webhooks.allowedHosts/);
  });

  it("says callbacks are off when nothing is listed, naming the host and port", () => {
    expect(whyCallbackRefused("http://localhost:5432/x", [])).toBe(
      "callbacks are off: no host is listed in webhooks.allowedHosts, so localhost:5432 is refused",
    );
  });

  it.each<[string, string[], boolean]>([
    // A host without a port: the scheme's default port only.
    ["http://localhost/hook", ["localhost"], true],
    ["http://localhost:80/hook", ["localhost"], true],
    ["https://localhost/hook", ["localhost"], true],
    ["https://localhost:443/hook", ["localhost"], true],
    ["http://localhost:5432/hook", ["localhost"], false],
    ["http://localhost:443/hook", ["localhost"], false],
    ["https://localhost:80/hook", ["localhost"], false],
    ["https://localhost:8443/hook", ["localhost"], false],
    ["https://a.example.com:8443/hook", ["*.example.com"], false],
    // host:port: that port only, whatever the scheme.
    ["http://localhost:8080/hook", ["localhost:8080"], true],
    ["https://localhost:8080/hook", ["localhost:8080"], true],
    ["http://localhost:8081/hook", ["localhost:8080"], false],
    ["http://localhost/hook", ["localhost:8080"], false],
    ["http://localhost/hook", ["localhost:80"], true],
    ["https://localhost/hook", ["localhost:80"], false],
    ["https://a.example.com:8443/hook", ["*.example.com:8443"], true],
    ["https://a.example.com/hook", ["*.example.com:8443"], false],
    ["http://localhost:8080/hook", ["localhost", "localhost:8080"], true],
    ["http://127.0.0.1:8080/hook", ["127.0.0.1:8080"], true],
    ["http://127.0.0.1:8080/hook", ["127.0.0.1"], false],
    // IPv6: brackets, compressed or not.
    ["http://[::1]:8080/hook", ["[::1]:8080"], true],
    ["http://[::1]/hook", ["[::1]"], true],
    ["http://[::1]:8080/hook", ["[::1]"], false],
    ["http://[0:0:0:0:0:0:0:1]:8080/hook", ["[::1]:8080"], true],
    ["http://[::1]:8080/hook", ["[0:0:0:0:0:0:0:1]:8080"], true],
    ["http://[::2]:8080/hook", ["[::1]:8080"], false],
    // Case and a trailing dot name the same host.
    ["https://HOOKS.Example.COM/cs", ["hooks.example.com"], true],
    ["https://hooks.example.com/cs", ["Hooks.EXAMPLE.com"], true],
    ["https://hooks.example.com./cs", ["hooks.example.com"], true],
    ["https://hooks.example.com/cs", ["hooks.example.com."], true],
    ["https://a.example.com./cs", ["*.example.com"], true],
    ["https://a.example.com.:8443/cs", ["*.Example.com.:8443"], true],
    // A look-alike is another host.
    ["https://hooks.example.com.evil.test/cs", ["hooks.example.com"], false],
    ["https://evilexample.com/cs", ["*.example.com"], false],
  ])("%s with %j: allowed %s", (url, allowed, ok) => {
    const why = whyCallbackRefused(url, allowed);
    if (ok) expect(why).toBeUndefined();
    else expect(why).toMatch(/webhooks\.allowedHosts/);
  });

  it("names the URL's host:port and the key, and says how to allow another port of a listed host", () => {
    expect(whyCallbackRefused("http://localhost:5432/x", ["localhost"])).toBe(
      `localhost:5432 is not in webhooks.allowedHosts (localhost): only other ports of its host are listed, and an entry without a port allows only 80 for http; list "localhost:5432" to allow this one`,
    );
    expect(whyCallbackRefused("https://localhost:8443/x", ["localhost:8080"])).toBe(
      `localhost:8443 is not in webhooks.allowedHosts (localhost:8080): only other ports of its host are listed; list "localhost:8443" to allow this one`,
    );
    expect(whyCallbackRefused("https://evil.test/cs", ["hooks.example.com", "localhost:8080"])).toBe(
      "evil.test:443 is not in webhooks.allowedHosts (hooks.example.com, localhost:8080)",
    );
    expect(whyCallbackRefused("http://[::1]:9/x", ["[::1]:8080"])).toMatch(/^\[::1\]:9 is not in webhooks\.allowedHosts/);
  });

  it("an entry it cannot read allows nothing", () => {
    expect(whyCallbackRefused("http://localhost/hook", ["http://localhost"])).toMatch(/not in webhooks.allowedHosts/);
    expect(whyCallbackRefused("http://localhost:99/hook", ["localhost:*"])).toMatch(/not in webhooks.allowedHosts/);
  });

  it("refuses a scheme other than http(s)", () => {
    expect(whyCallbackRefused("ftp://hooks.example.com/cs", ["hooks.example.com"])).toMatch(/only http and https/);
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

describe("parseAllowedHost", () => {
  it.each<[string, { host: string; wildcard: boolean; port: number | undefined }]>([
    ["hooks.example.com", { host: "hooks.example.com", wildcard: false, port: undefined }],
    ["Hooks.Example.com.", { host: "hooks.example.com", wildcard: false, port: undefined }],
    ["localhost:8080", { host: "localhost", wildcard: false, port: 8080 }],
    ["*.example.com", { host: "example.com", wildcard: true, port: undefined }],
    ["*.example.com:8443", { host: "example.com", wildcard: true, port: 8443 }],
    ["[::1]", { host: "[::1]", wildcard: false, port: undefined }],
    ["[0:0:0:0:0:0:0:1]:8080", { host: "[::1]", wildcard: false, port: 8080 }],
    ["127.0.0.1:5432", { host: "127.0.0.1", wildcard: false, port: 5432 }],
  ])("reads %s", (entry, read) => {
    expect(parseAllowedHost(entry)).toEqual(read);
  });

  it.each([
    ["", /is not a host/],
    ["http://hooks.example.com", /is not a host/],
    ["hooks.example.com/path", /is not a host/],
    ["bot@hooks.example.com", /is not a host/],
    ["localhost:", /is not a host/],
    ["localhost:*", /is not a host/],
    ["::1", /is not a host/],
    ["::1:8080", /is not a host/],
    ["[::1", /is not a host/],
    ["*", /is not a host/],
    ["*example.com", /is not a host/],
    ["a.*.example.com", /is not a host/],
    ["localhost:0", /a port is 1 to 65535/],
    ["localhost:65536", /a port is 1 to 65535/],
    ["*.10.0.0.1", /not an IP address/],
    ["*.[::1]", /not an IP address/],
  ])("refuses %j", (entry, why) => {
    const read = parseAllowedHost(entry);
    expect(read).toHaveProperty("error", expect.stringMatching(why));
  });
});
