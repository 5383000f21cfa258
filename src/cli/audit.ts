import { createWriteStream } from "node:fs";
import { readFile } from "node:fs/promises";
import { once } from "node:events";
import { parseArgs } from "node:util";
import type { CliConfig } from "../config/load.ts";
import { runningServer } from "../server/data-dir-lock.ts";
import { ServiceError } from "../service/errors.ts";
import { exportAudit } from "../service/export-audit.ts";
import { loadSealPublicKeys } from "../service/seal-signature.ts";
import { verifyAudit } from "../service/verify-audit.ts";
import { parseSealsFile, sealsVerdictLines, verifySeals } from "../service/verify-seals.ts";
import type { Database } from "../store/db.ts";
import { openMigrated } from "../store/open-migrated.ts";
import { auditVerdictLines, auditVerifyCommand } from "./agents.ts";

const USAGE = "usage: countersign audit verify [--seals FILE --public-key PEM_FILE] | audit export --since ISO_TIME [--out FILE]";

/** `countersign audit verify|export`. */
export async function auditCommand(config: CliConfig, args: string[], out: (line: string) => void): Promise<number> {
  const [verb, ...rest] = args;
  if (verb === "verify") {
    const { values } = parseArgs({ args: rest, options: { seals: { type: "string" }, "public-key": { type: "string" } }, strict: true });
    if (!values.seals && !values["public-key"]) return auditVerifyCommand(config, out);
    if (!values.seals || !values["public-key"]) throw new ServiceError("invalid_request", "--seals FILE and --public-key PEM_FILE go together: the published seals and the key that signed them");
    return verifyWithSeals(config, values.seals, values["public-key"], out);
  }
  if (verb === "export") {
    const { values } = parseArgs({ args: rest, options: { since: { type: "string" }, out: { type: "string" } }, strict: true });
    const since = values.since === undefined ? undefined : new Date(values.since);
    if (!since || Number.isNaN(since.getTime())) throw new ServiceError("invalid_request", `--since must be an ISO 8601 time such as 2026-01-31T00:00:00Z${values.since ? `, got '${values.since}'` : ""}`);
    return exportTrail(config, since, values.out, out);
  }
  throw new ServiceError("invalid_request", USAGE);
}

/** These read the database directly: an embedded data dir held by a running server cannot be opened a second time. */
async function openDirect(config: CliConfig, what: string): Promise<Database> {
  if (config.database.kind === "pglite" && runningServer(config.database.dataDir)) {
    throw new ServiceError("conflict", `${what} reads the embedded database directly, and a running server holds ${config.database.dataDir}; stop it first (or run Countersign on PostgreSQL)`);
  }
  return openMigrated(config.database);
}

async function verifyWithSeals(config: CliConfig, sealsFile: string, publicKeyArg: string, out: (line: string) => void): Promise<number> {
  const entries = parseSealsFile(await readText(sealsFile, "the seals file"), sealsFile);
  const pem = publicKeyArg.includes("BEGIN PUBLIC KEY") ? publicKeyArg : await readText(publicKeyArg, "the public key file");
  let keys;
  try {
    keys = loadSealPublicKeys(pem);
  } catch (err) {
    throw new ServiceError("invalid_request", `--public-key: ${(err as Error).message}`);
  }
  const database = await openDirect(config, "audit verify --seals");
  try {
    const ctx = { database };
    const published = await verifySeals(ctx, entries, keys);
    const verdict = await verifyAudit(ctx);
    sealsVerdictLines(published).forEach((l) => out(l));
    auditVerdictLines(verdict).forEach((l) => out(l));
    return published.ok && verdict.ok ? 0 : 1;
  } finally {
    await database.close();
  }
}

async function exportTrail(config: CliConfig, since: Date, outFile: string | undefined, out: (line: string) => void): Promise<number> {
  const database = await openDirect(config, "audit export");
  const sink = outFile ? createWriteStream(outFile, { encoding: "utf8" }) : process.stdout;
  let n = 0;
  try {
    for await (const event of exportAudit({ database }, { since })) {
      if (!sink.write(JSON.stringify(event) + "\n")) await once(sink, "drain");
      n++;
    }
  } finally {
    await database.close();
    if (outFile) {
      (sink as ReturnType<typeof createWriteStream>).end();
      await once(sink, "finish");
    }
  }
  if (outFile) out(`Exported ${n} audit event(s) since ${since.toISOString()} to ${outFile}.`);
  return 0;
}

async function readText(file: string, what: string): Promise<string> {
  try {
    return await readFile(file, "utf8");
  } catch (err) {
    throw new ServiceError("invalid_request", `${what} ${file} could not be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}
