// `node --import <this file>`: appends the URL of every module the process resolves (ESM
// `import`, static or dynamic, in the main thread) to the file named by COUNTERSIGN_IMPORT_LOG.
// process.moduleLoadList lists only built-ins, so this is how a test sees which packages loaded.
import { register } from "node:module";

register(new URL("./import-recorder-hooks.mjs", import.meta.url), { data: { log: process.env.COUNTERSIGN_IMPORT_LOG } });
