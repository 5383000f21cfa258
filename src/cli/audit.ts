import { createWriteStream } from "node:fs";
import { readFile } from "node:fs/promises";
import { once } from "node:events";
import type { CliConfig } from "../config/load.ts";
import { runningServer } from "../server/data-dir-lock.ts";
import { ServiceError } from "../service/errors.ts";
import { exportAudit } from "../service/audit/index.ts";
import { loadSealPublicKeys } from "../service/audit/index.ts";
import { verifyAudit } from "../service/audit/index.ts";
import { parseSealsFile, sealsVerdictLines, verifySeals, type SealsVerdict } from "../service/audit/index.ts";
import type { AuditVerdict } from "../service/audit/index.ts";
import { openMigrated } from "../store/open-migrated.ts";
import { auditVerdictLines, auditVerifyCommand } from "./agents.ts";

/** `countersign audit verify [--seals FILE --public-key PEM_FILE]`. */
export async function auditVerify(
  config: CliConfig,
  options: { seals: string | undefined; publicKey: string | undefined },
  out: (line: string) => void,
): Promise<number> {
  if (!options.seals && !options.publicKey) return auditVerifyCommand(config, out);
  if (!options.seals || !options.publicKey)
    throw new ServiceError("invalid_request", "--seals FILE and --public-key PEM_FILE go together: the published seals and the key that signed them");
  return verifyWithSeals(config, options.seals, options.publicKey, out);
}

/** `countersign audit export --since ISO_TIME [--out FILE]`. */
export async function auditExport(
  config: CliConfig,
  options: { since: string | undefined; outFile: string | undefined },
  out: (line: string) => void,
): Promise<number> {
  const since = options.since === undefined ? undefined : new Date(options.since);
  if (!since || Number.isNaN(since.getTime()))
    throw new ServiceError(
      "invalid_request",
      `--since must be an ISO 8601 time such as 2026-01-31T00:00:00Z${options.since ? `, got '${options.since}'` : ""}`,
    );
  return exportTrail(config, since, options.outFile, out);
}

/** The server holding an embedded data dir, whose /admin routes these go through (PGlite cannot be opened twice). */
const holder = (config: CliConfig) => (config.database.kind === "pglite" ? runningServer(config.database.dataDir) : undefined);

async function admin(server: { url: string; adminToken: string }, method: string, route: string, body?: unknown): Promise<Response> {
  const response = await fetch(server.url + "/admin" + route, {
    method,
    headers: { authorization: `Bearer ${server.adminToken}`, "content-type": "application/json" },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  }).catch((err: unknown) => {
    throw new Error(`the server using this data dir (${server.url}) did not answer: ${(err as Error).message}`);
  });
  if (!response.ok) {
    const json = (await response.json().catch(() => ({}))) as { error?: { code: ServiceError["code"]; message: string } };
    if (json.error) throw new ServiceError(json.error.code, json.error.message);
    throw new Error(`the server using this data dir (${server.url}) answered HTTP ${response.status}`);
  }
  return response;
}

async function verifyWithSeals(config: CliConfig, sealsFile: string, publicKeyArg: string, out: (line: string) => void): Promise<number> {
  const text = await readText(sealsFile, "the seals file");
  const entries = parseSealsFile(text, sealsFile);
  const pem = publicKeyArg.includes("BEGIN PUBLIC KEY") ? publicKeyArg : await readText(publicKeyArg, "the public key file");
  let keys: ReturnType<typeof loadSealPublicKeys>;
  try {
    keys = loadSealPublicKeys(pem);
  } catch (err) {
    throw new ServiceError("invalid_request", `--public-key: ${(err as Error).message}`);
  }
  let result: { published: SealsVerdict; verdict: AuditVerdict };
  const server = holder(config);
  if (server) {
    result = (await (await admin(server, "POST", "/audit/verify-seals", { seals: text, publicKey: pem })).json()) as typeof result;
  } else {
    const database = await openMigrated(config.database);
    try {
      const ctx = { database };
      result = { published: await verifySeals(ctx, entries, keys), verdict: await verifyAudit(ctx) };
    } finally {
      await database.close();
    }
  }
  for (const l of sealsVerdictLines(result.published)) out(l);
  for (const l of auditVerdictLines(result.verdict)) out(l);
  return result.published.ok && result.verdict.ok ? 0 : 1;
}

async function exportTrail(config: CliConfig, since: Date, outFile: string | undefined, out: (line: string) => void): Promise<number> {
  const sink = outFile ? createWriteStream(outFile, { encoding: "utf8" }) : process.stdout;
  const write = async (chunk: string | Uint8Array) => {
    if (!sink.write(chunk)) await once(sink, "drain");
  };
  let n = 0;
  try {
    const server = holder(config);
    if (server) {
      const response = await admin(server, "GET", `/audit/export?since=${encodeURIComponent(since.toISOString())}`);
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        for (const byte of chunk) if (byte === 10) n++;
        await write(chunk);
      }
    } else {
      const database = await openMigrated(config.database);
      try {
        for await (const event of exportAudit({ database }, { since })) {
          await write(JSON.stringify(event) + "\n");
          n++;
        }
      } finally {
        await database.close();
      }
    }
  } finally {
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
