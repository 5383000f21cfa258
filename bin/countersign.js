#!/usr/bin/env node
// Countersign ships its TypeScript sources and runs them through tsx.
import { register } from "tsx/esm/api";

register();
await import("../src/cli.ts");
