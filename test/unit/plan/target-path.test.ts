import { describe, expect, it } from "vitest";
import { targetUrl } from "../../../src/adapters/target-url.ts";
import { whyUnsafePath } from "../../../src/plan/target-path.ts";

const SAFE_PATHS = [
  "/contacts/1",
  "/a/b-c_d.e~f",
  "/x%20y",
  "/users/@me",
  "/contacts",
  "/a/b/c/d/e",
  "/...", // three dots is an ordinary segment name, not a dot-segment
  "/.well-known/x",
  "/a.b/..c/d..",
  "/%C3%A9", // percent-encoded UTF-8 is how non-ASCII is written
  "/a;b=c,d",
  "/users/a:b", // a colon after the first segment cannot form a scheme
  "/mailto:x", // nor in the first: the path is appended to the base URL, never parsed alone
  "/v1:batch",
  "/a/", // a collection
  "/",
  "/!$&'()*+,;=",
];

/** [path, a fragment of the reason it is refused]. */
const REFUSED_PATHS: [path: string, why: RegExp][] = [
  ["", /must start with '\/'/],
  ["contacts", /must start with '\/'/],
  ["http://evil", /absolute URL/],
  ["javascript:alert(1)", /absolute URL/],
  ["//evil.com/x", /'\/\/'/],
  ["///evil.com/x", /'\/\/'/],
  ["/http://evil", /empty segments/],
  ["/HTTPS://evil", /empty segments/],
  ["/..;/x", /'\.' or '\.\.'/], // servers that drop ;params would climb out
  ["/a/..;jsessionid=1/b", /'\.' or '\.\.'/],
  ["/../etc", /'\.' or '\.\.'/],
  ["/a/../b", /'\.' or '\.\.'/],
  ["/a/..", /'\.' or '\.\.'/],
  ["/a/./b", /'\.' or '\.\.'/],
  ["/.", /'\.' or '\.\.'/],
  ["/%2e%2e/x", /'\.' or '\.\.'/],
  ["/%2E%2e/x", /'\.' or '\.\.'/],
  ["/.%2e/x", /'\.' or '\.\.'/],
  ["/%2e/x", /'\.' or '\.\.'/],
  ["/a%2fb", /must not encode/],
  ["/a%2Fb", /must not encode/],
  ["/a%5cb", /must not encode/],
  ["/%5C%5Cevil", /must not encode/],
  ["/a%252e%252e", /must not encode/],
  ["/%252e%252e/x", /must not encode/],
  ["/a%25", /must not encode/],
  ["/a\\b", /'\\'/],
  ["/\\evil.com", /'\\'/],
  ["/a?x=1", /query or fragment/],
  ["/a#f", /query or fragment/],
  ["/a//b", /empty segments/],
  ["/a//", /empty segments/],
  ["/%zz", /malformed percent-encoding/],
  ["/a%", /malformed percent-encoding/],
  ["/%u002e", /malformed percent-encoding/],
  ["/%c3", /malformed percent-encoding/], // a lone UTF-8 lead byte
  ["/a%00b", /control characters/],
  ["/a%0a", /control characters/],
  ["/a%0D%0AHost:%20evil", /control characters/],
  ["/a%7f", /control characters/],
  ["/café", /only URL path characters/],
  ["/ａ", /only URL path characters/], // fullwidth a
  ["/a b", /only URL path characters/],
  ["/a\tb", /only URL path characters/],
  ["/a\nb", /only URL path characters/],
  ["/a\u2028b", /only URL path characters/],
  ["/😀", /only URL path characters/],
  ['/a"b', /only URL path characters/],
  ["/<script>", /only URL path characters/],
];

describe("whyUnsafePath", () => {
  it.each(SAFE_PATHS)("accepts %j", (path) => {
    expect(whyUnsafePath(path)).toBeUndefined();
  });

  it.each(REFUSED_PATHS)("refuses %j", (path, why) => {
    const reason = whyUnsafePath(path);
    expect(reason).toBeTypeOf("string");
    expect(reason).toMatch(why);
  });
});

describe("targetUrl", () => {
  it.each<[base: string, path: string, expected: string]>([
    ["http://h:1/api/", "/x", "http://h:1/api/x"],
    ["http://h:1/api", "/x", "http://h:1/api/x"],
    ["http://h:1/api//", "/x", "http://h:1/api/x"],
    ["http://h:1/api/v2/", "/contacts/1", "http://h:1/api/v2/contacts/1"],
    ["http://h:1", "/x", "http://h:1/x"],
    ["http://h:1/", "/x", "http://h:1/x"],
    ["https://crm.example.com/", "/users/@me", "https://crm.example.com/users/@me"],
    ["http://h:1/api/", "/x%20y", "http://h:1/api/x%20y"],
    ["http://h:1/a%20b/", "/c", "http://h:1/a%20b/c"],
    ["http://h:1/api/", "/a/b-c_d.e~f", "http://h:1/api/a/b-c_d.e~f"],
    // The base's own query and fragment are not carried over to the target URL.
    ["http://h:1/api/?q=1#frag", "/x", "http://h:1/api/x"],
  ])("%s + %s → %s", (base, path, expected) => {
    const url = targetUrl(base, path);
    expect(url).toBeInstanceOf(URL);
    expect(url.href).toBe(expected);
  });

  it.each(REFUSED_PATHS)("throws for unsafe path %j", (path) => {
    expect(() => targetUrl("http://h:1/api/", path)).toThrow(/unsafe target path/);
  });

  // Whatever the path, the URL stays on the base's origin and under its path, or nothing is built.
  const HOSTILE = [
    ...REFUSED_PATHS.map(([p]) => p),
    ...SAFE_PATHS,
    "/@evil.com",
    "/:@evil.com",
    "/evil.com:80",
    "/%40evil.com",
    "/%2F%2Fevil.com",
    "/..;/x",
    "/%2e%2e;/x",
  ];
  it.each(HOSTILE)("never leaves the base for %j", (path) => {
    const base = new URL("http://countersign-target.test:4010/api/");
    let url: URL;
    try {
      url = targetUrl(base.href, path);
    } catch {
      expect(whyUnsafePath(path) ?? "threw after validation").toBeTypeOf("string");
      return;
    }
    expect(url.origin).toBe(base.origin);
    expect(url.host).toBe("countersign-target.test:4010");
    expect(url.username).toBe("");
    expect(url.pathname.startsWith("/api/")).toBe(true);
    expect(url.search).toBe("");
    expect(url.hash).toBe("");
  });
});
