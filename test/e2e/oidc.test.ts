import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Config } from "../../src/config/load.ts";
import { FileConfig } from "../../src/config/schema.ts";
import { runServer, type RunningServer } from "../../src/server/run-server.ts";
import { createLoginLink } from "../../src/service/sign-in/login-links.ts";
import { slackSignIn } from "../../src/service/sign-in/oidc-sign-in.ts";
import { oidcRoutes } from "../../src/web/oidc-routes.tsx";
import { chromiumAvailable, launchChromium, screenshotPath } from "../support/chromium.ts";
import { databaseKinds } from "../support/databases.ts";
import { freePort } from "../support/free-port.ts";
import { useServer } from "../support/use-harness.ts";
import { silentLogger, targetConfig, testConfig, testGrantKeys } from "../support/harness.ts";
import { OidcEmulator } from "../support/oidc-emulator.ts";
import { SlackEmulator } from "../support/slack-emulator.ts";

const CLIENT = { clientId: "1234.5678", clientSecret: "oidc-client-secret-for-tests" };
const ALICE = { userId: "U0ALICE", teamId: "T0TEST", name: "Alice Reviewer", email: "alice@example.com" };

/** A browser's cookie handling, just enough of it: per-path cookies, deletion, HttpOnly kept as seen. */
class CookieJar {
  readonly cookies = new Map<string, { value: string; path: string; attributes: string }>();
  store(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(";").map((s) => s.trim());
      const eq = pair!.indexOf("=");
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      const path = attrs.find((a) => a.toLowerCase().startsWith("path="))?.slice(5) ?? "/";
      const gone = attrs.some((a) => /^max-age=0$/i.test(a)) || value === "";
      if (gone) this.cookies.delete(name);
      else this.cookies.set(name, { value, path, attributes: attrs.join("; ") });
    }
  }
  header(url: URL): string {
    return [...this.cookies]
      .filter(([, c]) => url.pathname.startsWith(c.path))
      .map(([n, c]) => `${n}=${c.value}`)
      .join("; ");
  }
}

interface Hop {
  url: string;
  status: number;
  body: string;
}

/**
 * Follows redirects by hand the way a browser does, sending this server's cookies only to it.
 * `stopAt` ends the walk before a URL is requested (to take Slack's answer apart).
 */
async function browse(
  start: string,
  jar: CookieJar,
  origin: string,
  stopAt?: (url: URL) => boolean,
  referer?: string,
): Promise<{ hops: Hop[]; last: Hop; stoppedAt?: URL }> {
  const hops: Hop[] = [];
  let url = new URL(start);
  for (let i = 0; i < 10; i++) {
    if (stopAt?.(url)) return { hops, last: hops.at(-1)!, stoppedAt: url };
    const ours = url.origin === origin;
    const headers: Record<string, string> = { ...(ours && jar.header(url) ? { cookie: jar.header(url) } : {}), ...(i === 0 && referer ? { referer } : {}) };
    const res = await fetch(url, { redirect: "manual", headers });
    if (ours) jar.store(res);
    const hop = { url: url.href, status: res.status, body: await res.text() };
    hops.push(hop);
    const location = res.headers.get("location");
    if (res.status < 300 || res.status >= 400 || !location) return { hops, last: hop };
    url = new URL(location, url);
  }
  throw new Error(`more than 10 redirects from ${start}`);
}

describe.each(databaseKinds)("Sign in with Slack (OpenID Connect) on $name", (kind) => {
  let slack: SlackEmulator;
  let idp: OidcEmulator;
  let origin: string;
  let linksOff: RunningServer;
  let linksOffOrigin: string;
  let base: Config;
  const s = useServer(kind, {
    config: async (): Promise<Config> => {
      slack = new SlackEmulator({ teamId: "T0TEST" });
      await slack.start();
      const port = await freePort();
      origin = `http://127.0.0.1:${port}`;
      linksOffOrigin = `http://127.0.0.1:${await freePort()}`;
      idp = new OidcEmulator({ ...CLIENT, redirectUris: [`${origin}/auth/slack/callback`, `${linksOffOrigin}/auth/slack/callback`] }, ALICE);
      await idp.start();
      base = testConfig({ crm: targetConfig("http://127.0.0.1:9") });
      // teamId left out: it defaults to the bot token's team, which the Slack emulator says is T0TEST.
      return {
        ...base,
        port,
        publicUrl: origin,
        slack: {
          ...FileConfig.parse({}).slack,
          enabled: true,
          botToken: slack.botToken,
          signingSecret: "slack-signing-secret-for-tests",
          appToken: undefined,
          apiUrl: slack.url,
          reviewChannel: "C0REVIEW",
        },
        browser: { ...base.browser, loginLinks: true, oidc: { ...CLIENT, issuer: idp.url } },
      };
    },
    run: { hostname: "127.0.0.1", sweepMs: 3_600_000 },
  });

  const sessionCount = async () => Number((await s.database.rows<{ n: string }>(sql`SELECT count(*) AS n FROM web_sessions`))[0]!.n);
  const isCallback = (url: URL) => url.pathname === "/auth/slack/callback";

  /** Starts a sign-in and stops at the callback: Slack's answer and the flow cookie, not yet spent. */
  const toCallback = async (base = origin) => {
    const jar = new CookieJar();
    const walk = await browse(`${base}/auth/slack`, jar, base, isCallback);
    expect(walk.stoppedAt, `the walk from ${base}/auth/slack never reached the callback: ${JSON.stringify(walk.last)}`).toBeDefined();
    return { jar, callback: walk.stoppedAt!, flow: jar.cookies.get("cs_oidc_flow")! };
  };
  const refusedWith = async (callback: URL, jar: CookieJar, base = origin): Promise<string> => {
    const before = await sessionCount();
    const { last } = await browse(callback.href, jar, base);
    expect(last.status, last.body).toBe(403);
    expect(jar.cookies.has("cs_session")).toBe(false);
    expect(await sessionCount()).toBe(before);
    return last.body;
  };

  beforeAll(async () => {
    // A team that only allows OIDC, and no Slack door: teamId must come from the config.
    linksOff = await runServer({
      config: {
        ...base,
        port: Number(new URL(linksOffOrigin).port),
        publicUrl: linksOffOrigin,
        browser: { ...base.browser, loginLinks: false, oidc: { ...CLIENT, issuer: idp.url, teamId: "T0TEST" } },
      },
      logger: silentLogger,
      database: s.database,
      grantKey: (await testGrantKeys()).signing,
      hostname: "127.0.0.1",
      sweepMs: 3_600_000,
    });
  });
  afterAll(async () => {
    await linksOff?.close();
    await idp?.stop();
    await slack?.stop();
  });

  it("signs in as the Slack user, with a fresh HttpOnly Lax session, and opens /plans", async () => {
    idp.user = { ...ALICE };
    const jar = new CookieJar();
    const before = await sessionCount();
    const { hops, last } = await browse(`${origin}/auth/slack`, jar, origin);

    const authorize = new URL(hops.find((h) => h.url.startsWith(idp.url))!.url);
    expect(Object.fromEntries(authorize.searchParams)).toMatchObject({
      client_id: CLIENT.clientId,
      redirect_uri: `${origin}/auth/slack/callback`,
      response_type: "code",
      scope: "openid profile email",
      code_challenge_method: "S256",
      team: "T0TEST",
    });
    for (const p of ["state", "nonce", "code_challenge"]) expect(authorize.searchParams.get(p)?.length).toBeGreaterThanOrEqual(22);

    expect(last.url).toBe(`${origin}/plans`);
    expect(last.status).toBe(200);
    expect(last.body).toContain("Alice Reviewer");
    expect(last.body).toContain("U0ALICE");
    const session = jar.cookies.get("cs_session")!;
    expect(session.attributes).toMatch(/HttpOnly/);
    expect(session.attributes).toMatch(/SameSite=Lax/);
    expect(jar.cookies.has("cs_oidc_flow")).toBe(false);
    expect(await sessionCount()).toBe(before + 1);
    const [row] = await s.database.rows<{ user_id: string; name: string }>(sql`SELECT user_id, name FROM web_sessions ORDER BY created_at DESC LIMIT 1`);
    expect(row).toEqual({ user_id: "U0ALICE", name: "Alice Reviewer" });
    const [audit] = await s.database.rows<{ data: string }>(sql`SELECT data FROM audit_events WHERE type = 'session.created' ORDER BY id DESC LIMIT 1`);
    expect(JSON.parse(audit!.data)).toEqual({ via: "oidc" });
    // The token endpoint saw the client secret (client_secret_post) and a PKCE verifier.
    const tokenCall = idp.calls.filter((c) => c.path === "/api/openid.connect.token").at(-1)!;
    expect(tokenCall).toMatchObject({ status: 200, params: { client_secret: "[present]", code_verifier: "[present]", grant_type: "authorization_code" } });
  });

  it("the flow cookie is HttpOnly, Lax, scoped to /auth/slack and sealed (the PKCE verifier is not readable in it)", async () => {
    const { flow } = await toCallback();
    expect(flow.attributes).toMatch(/HttpOnly/);
    expect(flow.attributes).toMatch(/SameSite=Lax/);
    expect(flow.path).toBe("/auth/slack");
    expect(flow.value.split(".")).toHaveLength(5);
    expect(Buffer.from(flow.value.split(".")[0]!, "base64url").toString()).toContain('"enc":"A256GCM"');
  });

  it("comes back to the page it started from, and only to a page of this server", async () => {
    idp.user = { ...ALICE };
    const back = await browse(`${origin}/auth/slack?returnTo=${encodeURIComponent("/plans?status=pending")}`, new CookieJar(), origin);
    expect(back.last.url).toBe(`${origin}/plans?status=pending`);
    for (const evil of ["//evil.example/x", "https://evil.example/", "/\\evil.example", "plans"]) {
      const walk = await browse(`${origin}/auth/slack?returnTo=${encodeURIComponent(evil)}`, new CookieJar(), origin);
      expect(walk.last.url, evil).toBe(`${origin}/plans`);
    }
    // From the sign-in page itself: back to the page that asked, known from the Referer, ours only.
    const fromPage = await browse(`${origin}/auth/slack`, new CookieJar(), origin, undefined, `${origin}/plans?status=applied`);
    expect(fromPage.last.url).toBe(`${origin}/plans?status=applied`);
    const fromElsewhere = await browse(`${origin}/auth/slack`, new CookieJar(), origin, undefined, "https://evil.example/plans?status=applied");
    expect(fromElsewhere.last.url).toBe(`${origin}/plans`);
  });

  it("refuses a person from another workspace", async () => {
    idp.user = { ...ALICE, teamId: "T0OTHER" };
    try {
      const { jar, callback } = await toCallback();
      const body = await refusedWith(callback, jar);
      expect(body).toContain("workspace T0OTHER");
      expect(body).toContain("T0TEST");
    } finally {
      idp.user = { ...ALICE };
    }
  });

  it("refuses an answer with no state, a different state, or no flow cookie", async () => {
    const a = await toCallback();
    const noState = new URL(a.callback);
    noState.searchParams.delete("state");
    expect(await refusedWith(noState, a.jar)).toContain("carries no state");

    const b = await toCallback();
    const otherState = new URL(b.callback);
    otherState.searchParams.set("state", "x".repeat(43));
    expect(await refusedWith(otherState, b.jar)).toContain("state mismatch");

    // Slack's answer for one browser, delivered to another (login CSRF): that browser started nothing.
    const c = await toCallback();
    expect(await refusedWith(c.callback, new CookieJar())).toContain("no sign-in in progress");
    // A flow cookie that was tampered with is no flow at all.
    const d = await toCallback();
    const forged = new CookieJar();
    const parts = d.flow.value.split(".");
    parts[3] = parts[3]!.slice(0, -2) + (parts[3]!.endsWith("AA") ? "BB" : "AA");
    forged.cookies.set("cs_oidc_flow", { ...d.flow, value: parts.join(".") });
    expect(await refusedWith(d.callback, forged)).toContain("no sign-in in progress");
  });

  it("refuses a replayed code, even with the flow cookie copied", async () => {
    idp.user = { ...ALICE };
    const { jar, callback, flow } = await toCallback();
    const first = await browse(callback.href, jar, origin);
    expect(first.last.status).toBe(200);
    const replay = new CookieJar();
    replay.cookies.set("cs_oidc_flow", flow);
    const body = await refusedWith(callback, replay);
    expect(body).toContain("refused the sign-in code (invalid_grant");
    expect(idp.calls.filter((c) => c.path === "/api/openid.connect.token").at(-1)!.status).toBe(400);
  });

  it("refuses when Slack says no", async () => {
    idp.deny = "access_denied";
    const { jar, callback } = await toCallback();
    expect(await refusedWith(callback, jar)).toContain("did not sign you in (access_denied");
  });

  const badTokens = [
    { name: "a tampered ID token (payload changed after signing)", fault: { tamperedPayload: true }, says: /ID token was not accepted/ },
    { name: "an ID token signed with a key not in the JWKS", fault: { foreignKey: true }, says: /ID token was not accepted/ },
    { name: "an ID token for another client (audience)", fault: { audience: "9999.other-app" }, says: /ID token was not accepted.*aud/ },
    { name: "an ID token with another nonce", fault: { nonce: "n".repeat(43) }, says: /ID token was not accepted.*nonce/ },
    { name: "an ID token from another issuer", fault: { issuer: "https://slack.evil.example" }, says: /ID token was not accepted.*iss/ },
    { name: "an expired ID token", fault: { expiresIn: -600 }, says: /ID token was not accepted.*(exp|timestamp)/ },
  ];
  it.each(badTokens)("refuses $name", async ({ fault, says }) => {
    idp.user = { ...ALICE };
    const { jar, callback } = await toCallback();
    idp.nextIdToken = fault;
    expect(await refusedWith(callback, jar)).toMatch(says);
  });

  it("with browser.loginLinks: false, Sign in with Slack still works and login links are refused", async () => {
    idp.user = { ...ALICE };
    const jar = new CookieJar();
    const { last } = await browse(`${linksOffOrigin}/auth/slack`, jar, linksOffOrigin);
    expect(last.url).toBe(`${linksOffOrigin}/plans`);
    expect(last.status).toBe(200);
    expect(last.body).toContain("Alice Reviewer");

    const { url } = await createLoginLink(linksOff.ctx, { userId: "U0BOB", via: "cli" });
    const link = new URL(url.replace(/^https?:\/\/[^/]+/, linksOffOrigin));
    for (const method of ["GET", "POST"]) {
      const res = await fetch(link, { method, redirect: "manual", headers: { origin: linksOffOrigin } });
      expect(res.status, method).toBe(403);
      expect(await res.text()).toContain("Sign-in links are off");
      expect(res.headers.getSetCookie()).toEqual([]);
    }
  });

  it.skipIf(!chromiumAvailable)("in Chromium: a signed-out reader of a page signs in with Slack and is back on that page", async () => {
    idp.user = { ...ALICE };
    const browser = await launchChromium();
    try {
      const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
      await page.goto(`${origin}/plans?status=pending`);
      await page.screenshot({ path: screenshotPath(`oidc-sign-in-page-${kind.name}`), fullPage: true });
      await page.getByRole("link", { name: "Sign in with Slack" }).click();
      await page.waitForURL(`${origin}/plans?status=pending`);
      expect(await page.locator("header .who").innerText()).toMatch(/^Signed in as\s+Alice Reviewer\s+Sign out$/);
      const cookies = await page.context().cookies();
      expect(cookies.find((c) => c.name === "cs_session")).toMatchObject({ httpOnly: true, sameSite: "Lax", path: "/" });
      expect(cookies.find((c) => c.name === "cs_oidc_flow")).toBeUndefined();
      await page.screenshot({ path: screenshotPath(`oidc-signed-in-desktop-${kind.name}`), fullPage: true });
    } finally {
      await browser.close();
    }
  });

  it("an issuer that cannot be reached is a 502 naming it, not a crash, and is retried at the next sign-in", async () => {
    const deadPort = await freePort();
    const signIn = slackSignIn(s.server.ctx, {
      ...CLIENT,
      issuer: `http://127.0.0.1:${deadPort}`,
      teamId: "T0TEST",
      redirectUri: `${origin}/auth/slack/callback`,
    });
    const routes = oidcRoutes(signIn, { secure: false, origin });
    for (let attempt = 0; attempt < 2; attempt++) {
      const res = await routes.request("/auth/slack");
      expect(res.status).toBe(502);
      expect(await res.text()).toContain(`could not read the OpenID configuration of http://127.0.0.1:${deadPort}`);
    }
    // A callback while the issuer is down opens nothing either (same client secret, so the flow itself is valid).
    const { flow, callback } = await toCallback();
    const before = await sessionCount();
    const res = await routes.request(`/auth/slack/callback${callback.search}`, { headers: { cookie: `cs_oidc_flow=${flow.value}` } });
    expect(res.status).toBe(502);
    expect(await sessionCount()).toBe(before);
  });

  it("a signed-out visitor is offered Sign in with Slack", async () => {
    const res = await fetch(`${origin}/plans`, { redirect: "manual" });
    expect(res.status).toBe(401);
    expect(await res.text()).toMatch(/href="\/auth\/slack"[^>]*>Sign in with Slack/);
  });
});
