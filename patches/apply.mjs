#!/usr/bin/env node
// Applies Countersign's patches to installed dependencies (run by `npm install` as postinstall).
// Each patch replaces an exact piece of a file; it is idempotent, and it fails loudly when the
// installed file is neither the text it expects nor already patched, so a driver upgrade that
// moved the code cannot silently drop the fix. See patches/README.md.
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(import.meta.url);

const patches = [
  {
    package: "postgres",
    versions: ["3.4.9"],
    files: ["src/connection.js", "cjs/src/connection.js", "cf/src/connection.js"],
    edits: [
      {
        // porsager/postgres#1154, #1208 (fix proposed in #1168/#1209, unmerged): nextWrite() runs
        // after closed() nulled the socket and throws from a setImmediate or 'data' callback, an
        // uncaughtException that kills the process. Settle the pending queries with
        // CONNECTION_CLOSED instead, as closed() does, so callers get an error they can catch.
        before: "  function nextWrite(fn) {\n    const x = socket.write(chunk, fn)\n",
        after:
          "  function nextWrite(fn) {\n" +
          "    if (!socket) { // countersign-patch: null socket (porsager/postgres#1208)\n" +
          "      nextWriteTimer !== null && clearImmediate(nextWriteTimer)\n" +
          "      chunk = nextWriteTimer = null\n" +
          "      error(Errors.connection('CONNECTION_CLOSED', options))\n" +
          "      return false\n" +
          "    }\n" +
          "    const x = socket.write(chunk, fn)\n",
      },
      {
        // closed() cancels a scheduled write but keeps its handle and bytes: the next connection
        // would then never schedule a flush (the handle is not null) and would send the dead
        // connection's bytes ahead of its startup message. The queries they belonged to were
        // rejected by closed() already.
        before: "    clearImmediate(nextWriteTimer)\n    socket.removeListener('data', data)\n",
        after: "    clearImmediate(nextWriteTimer)\n    chunk = nextWriteTimer = null // countersign-patch\n    socket.removeListener('data', data)\n",
      },
    ],
  },
];

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
    let patched = text;
    for (const edit of patch.edits) {
      if (patched.includes(edit.after)) continue;
      if (patched.split(edit.before).length !== 2) {
        console.error(`countersign patches: ${full} does not contain, exactly once, the code the patch expects:\n${edit.before}`);
        failed = true;
        continue;
      }
      patched = patched.replace(edit.before, edit.after);
    }
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
