import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../../../scripts/build.mjs";

/** package.json as it is published: the tarball carries it unchanged. */
const pkg = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { license: string; scripts: Record<string, string>; files: string[] };

describe("the published package.json", () => {
  it("runs nothing when installed: the scripts npm runs for a dependency would name files the tarball lacks", () => {
    // npm runs these for an installed package (prepare for a git or folder install) and warns
    // about each; building happens at `prepack`, in a checkout.
    const atInstall = ["preinstall", "install", "postinstall", "prepare"].filter((name) => name in pkg.scripts);
    expect(atInstall).toEqual([]);
  });

  it("ships the docs, the examples, the systemd units and the license beside dist/", () => {
    expect(pkg.files).toEqual(expect.arrayContaining(["dist", "docs", "examples", "deploy", "README.md", "CHANGELOG.md", "LICENSE"]));
  });

  it("LICENSE is the license package.json names", () => {
    expect(pkg.license).toBe("Apache-2.0");
    const text = readFileSync(path.join(ROOT, "LICENSE"), "utf8");
    expect(text).toMatch(/^\s*Apache License\s+Version 2\.0, January 2004\s+http:\/\/www\.apache\.org\/licenses\//);
    expect(text).toContain("END OF TERMS AND CONDITIONS");
  });
});
