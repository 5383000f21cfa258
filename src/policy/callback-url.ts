/**
 * Whether a webhook may go to this URL: only to hosts the operator listed, so an agent cannot
 * aim the server at its own network (SSRF). "*.example.com" allows subdomains, not the apex.
 */
export function whyCallbackRefused(url: string, allowedHosts: readonly string[]): string | undefined {
  const parsed = new URL(url);
  // Credentials in a URL end up in logs, the audit trail and the plan page; webhooks are signed instead.
  if (parsed.username !== "" || parsed.password !== "")
    return "it carries credentials (user:password@); Countersign signs each webhook, so drop them from the URL";
  const host = parsed.hostname.toLowerCase().replace(/^\[|\]$/g, "");
  const allowed = allowedHosts.some((pattern) => {
    const p = pattern.toLowerCase();
    return p.startsWith("*.") ? host.endsWith(p.slice(1)) && host.length > p.length - 1 : host === p;
  });
  if (allowed) return undefined;
  return allowedHosts.length === 0
    ? `callbacks are off: no host is listed in webhooks.allowedHosts, so ${host} is refused`
    : `host ${host} is not in webhooks.allowedHosts (${allowedHosts.join(", ")})`;
}
