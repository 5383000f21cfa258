/**
 * A target path is relative to the target's `baseUrl` and may never leave it. This is the
 * SSRF gate: it runs while the request is validated, before any request reaches a target.
 * Returns why the path is refused, or undefined when it is safe.
 */
export function whyUnsafePath(path: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(path)) return "must not be an absolute URL";
  if (path.length === 0 || path[0] !== "/") return "must start with '/' (it is relative to the target's baseUrl)";
  if (path.startsWith("//")) return "must not start with '//' (that names another host)";
  if (path.includes("\\")) return "must not contain '\\'";
  if (/[?#]/.test(path)) return "must not contain a query or fragment ('?' or '#')";
  if (!/^[A-Za-z0-9\-._~!$&'()*+,;=:@%/]*$/.test(path)) return "may contain only URL path characters (percent-encode the rest)";
  const segments = path.slice(1).split("/");
  for (const [i, raw] of segments.entries()) {
    // A trailing slash (a collection, or "/" itself) is fine; an empty segment inside is not.
    if (raw === "" && i === segments.length - 1) continue;
    if (raw === "") return "must not contain empty segments ('//')";
    let segment: string;
    try {
      segment = decodeURIComponent(raw);
    } catch {
      return `has a malformed percent-encoding in '${raw}'`;
    }
    // Some servers drop ';parameters' before resolving dot segments, so '..;x' climbs too.
    const bare = segment.split(";")[0];
    if (bare === "." || bare === "..") return "must not contain '.' or '..' segments, encoded or not";
    if (/[/\\%]/.test(segment) && segment !== raw) return `must not encode '/', '\\' or '%' (in '${raw}')`;
    // eslint-disable-next-line no-control-regex -- control characters are exactly what we refuse
    if (/[\u0000-\u001f\u007f]/.test(segment)) return "must not contain control characters";
  }
  return undefined;
}

/**
 * The form two paths share when they name the same resource: percent-encoding decoded.
 * Only meaningful for paths whyUnsafePath accepts.
 */
export function canonicalPath(path: string): string {
  return path
    .split("/")
    .map((s) => decodeURIComponent(s))
    .join("/");
}
