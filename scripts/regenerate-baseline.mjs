/**
 * Until the first release, migrations/ is one baseline and one guards file, regenerated in place:
 * the baseline by drizzle-kit from src/store/schema.ts, the guards file as drizzle-kit's custom
 * migration after it, its text kept as it is. Both get a new journal `when`, so a database made
 * from the files before is refused at start (src/store/migrations.ts) instead of half-migrated.
 * Run: npm run db:generate
 */
import { execFileSync } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const folder = fileURLToPath(new URL("../migrations/", import.meta.url));
const guardsFile = `${folder}0001_guards.sql`;
const guards = readFileSync(guardsFile, "utf8");
const drizzleKit = (...args) => execFileSync("npx", ["drizzle-kit", "generate", ...args], { cwd: root, stdio: "inherit" });

rmSync(`${folder}0000_baseline.sql`, { force: true });
rmSync(`${folder}meta`, { recursive: true, force: true });
try {
  drizzleKit("--name", "baseline");
  drizzleKit("--custom", "--name", "guards");
} finally {
  // drizzle-kit writes an empty custom migration over it.
  writeFileSync(guardsFile, guards);
}
