/**
 * The `targets:` lines of a countersign.yml with one http.json target `crm` at baseUrl, read with
 * the token in CRM_READ and, with `write`, written with the one in CRM_WRITE; `allowMerges`
 * limits it to merges of `/contacts/*`. Imports nothing, so the bench's processes load it cheaply.
 */
export function crmTargetYaml(baseUrl: string, options: { write?: boolean; allowMerges?: boolean } = {}): string[] {
  return [
    "targets:",
    "  crm:",
    "    adapter: http.json",
    `    baseUrl: ${baseUrl}`,
    '    read: { headers: { Authorization: "Bearer ${CRM_READ}" } }',
    ...(options.write ? ['    write: { headers: { Authorization: "Bearer ${CRM_WRITE}" } }'] : []),
    ...(options.allowMerges ? ['    allow: { ops: [merge], paths: ["/contacts/*"] }'] : []),
  ];
}
