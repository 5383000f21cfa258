// Module hooks for import-recorder.mjs; they run in the loader thread.
import { appendFileSync } from "node:fs";

let log;

export function initialize(data) {
  if (!data?.log) throw new Error("import-recorder: set COUNTERSIGN_IMPORT_LOG to the file to record into");
  log = data.log;
}

export async function resolve(specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context);
  appendFileSync(log, `${resolved.url}\n`);
  return resolved;
}
