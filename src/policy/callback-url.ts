/** The port a URL of this scheme reaches when it names none. */
const DEFAULT_PORTS: Record<string, number> = { "http:": 80, "https:": 443 };

/** One entry of `webhooks.allowedHosts`, read: a host (or, with `wildcard`, a domain's subdomains) and the port it names, if any. */
export interface AllowedHost {
  host: string;
  wildcard: boolean;
  port: number | undefined;
}

// A host, a domain after "*.", or an [IPv6] address, then an optional ":port"; no scheme, path or user.
const ENTRY = /^(\*\.)?(\[[0-9a-fA-F:.]+\]|[^:[\]/?#@\\\s*]+)(?::(\d{1,5}))?$/;

/**
 * Reads one `webhooks.allowedHosts` entry: "hooks.example.com", "*.example.com",
 * "localhost:8080", "[::1]:8080". The host goes through the URL parser, as a callback URL's
 * does, so both compare in one form (lower case, IDN as punycode, IPv6 compressed).
 */
export function parseAllowedHost(entry: string): AllowedHost | { error: string } {
  const refused = { error: `"${entry}" is not a host, host:port, *.domain or [IPv6]:port (e.g. "hooks.example.com", "localhost:8080", "[::1]:8080")` };
  const match = ENTRY.exec(entry);
  if (!match) return refused;
  const [, star, written, portText] = match;
  const port = portText === undefined ? undefined : Number(portText);
  if (port !== undefined && (port < 1 || port > 65_535)) return { error: `"${entry}" names port ${portText}; a port is 1 to 65535` };
  let host: string;
  try {
    host = withoutTrailingDot(new URL(`http://${written}/`).hostname);
  } catch {
    return refused;
  }
  if (host === "") return refused;
  const wildcard = star !== undefined;
  if (wildcard && (host.startsWith("[") || /^[\d.]+$/.test(host))) return { error: `"${entry}": a wildcard covers a domain's subdomains, not an IP address` };
  return { host, wildcard, port };
}

/**
 * Whether a webhook may go to this URL: only to hosts and ports the operator listed, so an agent
 * cannot aim the server at its own network (SSRF). An entry without a port allows only the
 * scheme's default one: "localhost" must not open the database's port on it. Checked at submit
 * and again at each delivery, against the config the server runs then.
 */
export function whyCallbackRefused(url: string, allowedHosts: readonly string[]): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "it is not a URL";
  }
  const defaultPort = DEFAULT_PORTS[parsed.protocol];
  if (defaultPort === undefined) return `only http and https callbacks are sent, not ${parsed.protocol}`;
  // Credentials in a URL end up in logs, the audit trail and the plan page; webhooks are signed instead.
  if (parsed.username !== "" || parsed.password !== "")
    return "it carries credentials (user:password@); Countersign signs each webhook, so drop them from the URL";
  const host = withoutTrailingDot(parsed.hostname);
  const port = parsed.port === "" ? defaultPort : Number(parsed.port);
  const where = `${parsed.hostname}:${port}`;
  const entries = allowedHosts.map(parseAllowedHost).filter((e): e is AllowedHost => !("error" in e));
  const ofHost = entries.filter((e) => (e.wildcard ? host.endsWith(`.${e.host}`) : host === e.host));
  if (ofHost.some((e) => (e.port ?? defaultPort) === port)) return undefined;
  if (allowedHosts.length === 0) return `callbacks are off: no host is listed in webhooks.allowedHosts, so ${where} is refused`;
  const listed = `webhooks.allowedHosts (${allowedHosts.join(", ")})`;
  if (ofHost.length === 0) return `${where} is not in ${listed}`;
  const bare = ofHost.some((e) => e.port === undefined) ? `, and an entry without a port allows only ${defaultPort} for ${parsed.protocol.slice(0, -1)}` : "";
  return `${where} is not in ${listed}: only other ports of its host are listed${bare}; list "${where}" to allow this one`;
}

/** "example.com." and "example.com" name one host. */
function withoutTrailingDot(host: string): string {
  return host.endsWith(".") ? host.slice(0, -1) : host;
}
