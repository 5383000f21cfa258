#!/usr/bin/env node
// Applies Countersign's patches to installed dependencies (the tests' global setup runs it).
// Each patch replaces an exact piece of a file; it is idempotent, and it fails loudly when the
// installed file is neither the text it expects nor already patched, so a driver upgrade that
// moved the code cannot silently drop the fix. See patches/README.md.
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { applyEdits, patches } from "./postgres-restart.mjs";

const require = createRequire(import.meta.url);

let failed = false;
for (const patch of patches) {
  const root = packageRoot(patch.package);
  if (!root) continue; // not installed: nothing to patch
  const { version } = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));
  if (!patch.versions.includes(version)) {
    console.error(`countersign patches: ${patch.package}@${version} is not a version this patch was written for (${patch.versions.join(", ")}); check whether upstream fixed it and update patches/apply.mjs`);
    failed = true;
    continue;
  }
  for (const file of patch.files) {
    const full = path.join(root, file);
    let text;
    try {
      text = readFileSync(full, "utf8");
    } catch {
      continue; // this build of the package lacks the variant (cf/ is for Cloudflare workers)
    }
    const result = applyEdits(text, patch.edits);
    if (result.problems) {
      for (const problem of result.problems) console.error(`countersign patches: ${full} ${problem}`);
      failed = true;
      continue;
    }
    const patched = result.text;
    if (patched !== text) {
      writeFileSync(full, patched);
      console.log(`countersign patches: patched ${patch.package}@${version} ${file}`);
    }
  }
}
process.exit(failed ? 1 : 0);

/** The installed package's directory (its package.json is not always exported, so walk up from its entry point). */
function packageRoot(name) {
  let entry;
  try {
    entry = require.resolve(name);
  } catch (err) {
    if (err.code === "MODULE_NOT_FOUND") return undefined;
    throw err;
  }
  for (let dir = path.dirname(entry); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    try {
      if (JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")).name === name) return dir;
    } catch {
      // no package.json here (or a nested one without a name): keep walking up
    }
  }
  throw new Error(`countersign patches: found ${name} at ${entry} but not its package.json`);
}
