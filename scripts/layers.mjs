/**
 * The layers of src/, lowest first: a module imports its own layer and those below it, never one
 * above (CONTRIBUTING.md, "Layers"). Biome enforces them: `node scripts/layers.mjs --write` turns
 * this list into biome.json's per-folder `noRestrictedImports` overrides, and
 * test/unit/build/layers.test.ts fails when biome.json is stale or a folder under src/ is in no
 * layer.
 */
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const LAYERS = [
  { name: "base", entries: ["util", "abortable-sleep.ts", "package-path.ts"], why: "helpers every layer may use; no Countersign concept" },
  { name: "plan", entries: ["plan"], why: "the pure domain: action kinds, schemas, fingerprint, diff, lifecycle" },
  { name: "contract", entries: ["contract"], why: "every body that crosses a process: agent API, executor API, error codes" },
  { name: "policy", entries: ["policy"], why: "who may act, quorum, TTLs, allowlists, redaction: pure rules" },
  { name: "keys and logs", entries: ["grant", "logging"], why: "grant signing and the redacting logger" },
  { name: "adapters", entries: ["adapters"], why: "one folder per action kind: preview, revalidate, apply, verify" },
  { name: "config", entries: ["config"], why: "the config file and environment, parsed once at start" },
  { name: "store", entries: ["store"], why: "the database schema and its drivers" },
  { name: "service", entries: ["service"], why: "the verbs, one folder per capability, each with an index.ts" },
  { name: "http", entries: ["http"], why: "what every HTTP door shares: capped body readers, request ids" },
  { name: "doors", entries: ["slack", "web", "mcp", "webhooks", "executor"], why: "parse input, call a verb, map errors; the executor process" },
  { name: "server", entries: ["server"], why: "one HTTP server composing the doors" },
  { name: "demo", entries: ["demo"], why: "the embedded demo's target and data" },
  { name: "cli", entries: ["cli", "cli.ts"], why: "the countersign command, one file per command" },
];
/** The client agents install: it stands alone, importing only its siblings. */
export const STANDALONE = ["client"];
const DOORS = LAYERS.find((l) => l.name === "doors").entries;

/** Every way a file at most three folders deep under src/ can name `entry` relatively. */
function specifiers(entry) {
  const glob = entry.endsWith(".ts") ? entry : `${entry}/**`;
  return ["./", "../", "../../"].map((up) => up + glob);
}

function restrictions(entry, layerIndex) {
  const patterns = [];
  const above = LAYERS.slice(layerIndex + 1);
  for (const layer of above) {
    patterns.push({
      group: layer.entries.flatMap(specifiers),
      message: `a ${LAYERS[layerIndex].name} module may not import the ${layer.name} layer above it (CONTRIBUTING.md, "Layers")`,
    });
  }
  if (DOORS.includes(entry)) {
    const others = DOORS.filter((d) => d !== entry);
    patterns.push({
      group: others.flatMap(specifiers),
      message: `a door does not import another door: what ${entry} shares with it belongs in http/ or service/`,
    });
  }
  if (entry === "executor") {
    patterns.push({
      group: ["service", "store", "http"].flatMap(specifiers),
      message: "the executor reaches the server only over the executor API (src/contract)",
    });
  }
  if (LAYERS.findIndex((l) => l.name === "service") < layerIndex) {
    patterns.push({
      group: ["./service/*/*", "../service/*/*", "!./service/*/index.ts", "!../service/*/index.ts"],
      message: "outside src/service a capability is reached through its index.ts only",
    });
  }
  return patterns;
}

/** biome.json's overrides: one per entry under src/, holding every import it may not make. */
export function layerOverrides() {
  const overrides = [];
  LAYERS.forEach((layer, i) => {
    for (const entry of layer.entries) {
      const patterns = restrictions(entry, i);
      if (patterns.length === 0) continue;
      overrides.push({
        includes: [entry.endsWith(".ts") ? `src/${entry}` : `src/${entry}/**`],
        linter: { rules: { style: { noRestrictedImports: { level: "error", options: { patterns } } } } },
      });
    }
  });
  for (const entry of STANDALONE) {
    overrides.push({
      includes: [`src/${entry}/**`],
      linter: {
        rules: {
          style: {
            noRestrictedImports: {
              level: "error",
              options: { patterns: [{ group: ["../**"], message: "the client agents install imports only its own siblings" }] },
            },
          },
        },
      },
    });
  }
  return overrides;
}

const BIOME = fileURLToPath(new URL("../biome.json", import.meta.url));

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const biome = JSON.parse(readFileSync(BIOME, "utf8"));
  biome.overrides = layerOverrides();
  const text = `${JSON.stringify(biome, null, 2)}\n`;
  if (process.argv.includes("--write")) {
    writeFileSync(BIOME, text);
    // Laid out as Biome formats its own config, so `biome ci` passes on what this writes.
    execFileSync(fileURLToPath(new URL("../node_modules/.bin/biome", import.meta.url)), ["format", "--write", BIOME], { stdio: "ignore" });
  } else process.stdout.write(text);
}
