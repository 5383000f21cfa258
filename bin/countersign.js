#!/usr/bin/env node
// Countersign ships its TypeScript sources and runs them through tsx.
import { fileURLToPath } from "node:url";
import { register } from "tsx/esm/api";

// The project's tsconfig, wherever the command is run from (tsx would otherwise look in the cwd).
register({ tsconfig: fileURLToPath(new URL("../tsconfig.json", import.meta.url)) });
await import("../src/cli.ts");
