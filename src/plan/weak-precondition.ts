/**
 * Which preconditions are weaker than the target refusing a racing write itself, and why: the one
 * rule Slack's preview and the plan page show. `digest` (http.json without ETags): the executor
 * re-reads and compares, but the target cannot refuse a write that lands in between. `xmin`
 * (postgres.row without a version column): the write is still conditional, but a dump and restore,
 * or VACUUM FULL, gives every row a new xmin, so plans made before it go stale.
 */
export function weakPrecondition(precondition: string | undefined): { label: string; why: string } | undefined {
  switch (precondition) {
    case "digest":
      return { label: "digest", why: "the target gives no ETag: the executor re-reads and compares a digest, but the target cannot refuse a racing write" };
    case "xmin":
      return { label: "xmin", why: "the table has no version column: the row's xmin is compared, which a dump and restore changes" };
    default:
      return undefined;
  }
}
