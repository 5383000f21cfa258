import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { CONFIGURATION_PAGE, configurationKeys, configurationPage, undescribedKeys } from "../../../scripts/gen-config-docs.ts";
import { EnvConfig } from "../../../src/config/schema.ts";

/** docs/configuration.md is generated from the schema; a key added or reworded there must reach the page. */
describe("docs/configuration.md", () => {
  it("is what `npm run gen:config-docs` writes from the schema", () => {
    const page = readFileSync(fileURLToPath(new URL(`../../../${CONFIGURATION_PAGE}`, import.meta.url)), "utf8");
    expect(page, "docs/configuration.md is stale: run `npm run gen:config-docs`").toBe(configurationPage());
  });

  it("has a description for every key of the file and every variable, and an example for every plain value", () => {
    expect(undescribedKeys()).toEqual([]);
  });

  it("names every key of both kinds of target, and every environment variable", () => {
    const { file, kinds } = configurationKeys();
    expect(kinds.map((k) => k.adapter)).toEqual(["http.json", "postgres.row"]);
    const paths = [...file, ...kinds.flatMap((k) => k.rows)].map((r) => r.path);
    for (const path of [
      "slack.reviewChannel",
      "defaults.ttl.max",
      "limits.agents.<agent>.maxPending",
      "targets.<name>.allow.ops",
      "targets.<name>.tables.<table>.key",
    ])
      expect(paths).toContain(path);
    const page = configurationPage();
    for (const variable of Object.keys(EnvConfig.shape)) expect(page).toContain(`| \`${variable}\` |`);
  });
});
