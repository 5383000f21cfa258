/**
 * A target path is relative to the target's `baseUrl` and may never leave it. This is the
 * SSRF gate: it runs while the request is validated, before any request reaches a target.
 * Returns why the path is refused, or undefined when it is safe.
 */
export function whyUnsafePath(path: string): string | undefined {
  if (path.length === 0 || path[0] !== "/") return "must start with '/' (it is relative to the target's baseUrl)";
  if (path.startsWith("//")) return "must not start with '//' (that names another host)";
  if (/^\/*[a-z][a-z0-9+.-]*:/i.test(path)) return "must not be an absolute URL";
  if (path.includes("\\")) return "must not contain '\\'";
  if (/[?#]/.test(path)) return "must not contain a query or fragment ('?' or '#')";
  if (!/^[A-Za-z0-9\-._~!$&'()*+,;=:@%/]*$/.test(path)) return "may contain only URL path characters (percent-encode the rest)";
  for (const raw of path.slice(1).split("/")) {
    if (raw === "") return "must not contain empty segments ('//')";
    let segment: string;
    try {
      segment = decodeURIComponent(raw);
    } catch {
      return `has a malformed percent-encoding in '${raw}'`;
    }
    if (segment === "." || segment === "..") return "must not contain '.' or '..' segments, encoded or not";
    if (/[/\\%]/.test(segment) && segment !== raw) return `must not encode '/', '\\' or '%' (in '${raw}')`;
    // eslint-disable-next-line no-control-regex -- control characters are exactly what we refuse
    if (/[\u0000-\u001f\u007f]/.test(segment)) return "must not contain control characters";
  }
  return undefined;
}
