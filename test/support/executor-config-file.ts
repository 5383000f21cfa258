import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

/**
 * The countersign.yml a spawned executor reads: one http.json target `crm` at targetUrl whose
 * credentials come from CRM_READ / CRM_WRITE, in a fresh temporary directory (the caller removes
 * it). The server side of the same tests is configured in code (testConfig); this file is what
 * the executor process, like a user's, loads from disk.
 */
export function writeExecutorConfig(targetUrl: string, options: { approvers: readonly string[]; prefix: string }): { dir: string; file: string } {
  const dir = mkdtempSync(path.join(os.tmpdir(), options.prefix));
  const file = path.join(dir, "countersign.yml");
  writeFileSync(file, [
    "environment: test",
    `defaults: { approvers: [${options.approvers.join(", ")}] }`,
    "targets:",
    "  crm:",
    "    adapter: http.json",
    `    baseUrl: ${targetUrl}`,
    '    read: { headers: { Authorization: "Bearer ${CRM_READ}" } }',
    '    write: { headers: { Authorization: "Bearer ${CRM_WRITE}" } }',
  ].join("\n"));
  return { dir, file };
}
