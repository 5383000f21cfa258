import { request } from "node:http";
import { afterAll, describe, expect, it } from "vitest";
import type { Config } from "../../src/config/load.ts";
import { createLoginLink } from "../../src/service/sign-in/login-links.ts";
import { pglite } from "../support/databases.ts";
import { targetConfig, testConfig } from "../support/harness.ts";
import { OidcEmulator } from "../support/oidc-emulator.ts";
import { useServer, type SuiteServer } from "../support/use-harness.ts";

const CLIENT = { clientId: "1234.5678", clientSecret: "oidc-client-secret-for-tests" };
const ALICE = { userId: "U0ALICE", teamId: "T0TEST", name: "Alice Reviewer", email: "alice@example.com" };
const HTTPS_PUBLIC = "https://countersign.test";
const HTTP_PUBLIC = "http://countersign.test";

interface Answer {
  status: number;
  location: string | undefined;
  cookies: Map<string, string[]>;
  body: string;
}

/**
 * One request as a TLS-terminating proxy passes it on: plain HTTP to the server's own port, with
 * the public Host and the X-Forwarded-* headers nginx or a load balancer adds.
 */
function throughProxy(
  s: SuiteServer,
  path: string,
  options: { method?: "GET" | "POST"; headers?: Record<string, string>; body?: string; forwardedProto?: "https" | "http" | undefined } = {},
): Promise<Answer> {
  const forwardedProto = "forwardedProto" in options ? options.forwardedProto : "https";
  const headers: Record<string, string> = {
    host: "countersign.test",
    "x-forwarded-for": "203.0.113.7",
    "x-forwarded-host": "countersign.test",
    ...(forwardedProto ? { "x-forwarded-proto": forwardedProto } : {}),
    ...(options.body !== undefined ? { "content-type": "application/x-www-form-urlencoded", "content-length": String(Buffer.byteLength(options.body)) } : {}),
    ...options.headers,
  };
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port: s.server.port, path, method: options.method ?? "GET", headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => {
        const cookies = new Map<string, string[]>();
        for (const line of res.headers["set-cookie"] ?? []) {
          const [pair, ...attributes] = line.split(";").map((part) => part.trim());
          cookies.set(pair!.slice(0, pair!.indexOf("=")), [pair!, ...attributes]);
        }
        resolve({ status: res.statusCode ?? 0, location: res.headers.location, cookies, body: Buffer.concat(chunks).toString() });
      });
    });
    req.on("error", reject);
    req.end(options.body);
  });
}

const attributesOf = (answer: Answer, name: string): string[] => {
  const cookie = answer.cookies.get(name);
  expect(cookie, `no ${name} cookie in the answer (${answer.status}): ${answer.body.slice(0, 200)}`).toBeDefined();
  return cookie!.slice(1).map((a) => a.toLowerCase());
};

/** Signs in with a one-time link, as the browser behind the proxy would; answers the login POST. */
async function signInWithLink(s: SuiteServer, origin: string, forwardedProto: "https" | undefined): Promise<Answer> {
  const link = await createLoginLink(s.server.ctx, { userId: ALICE.userId, name: ALICE.name, via: "cli" });
  const path = new URL(link.url).pathname;
  expect((await throughProxy(s, path, { forwardedProto })).status).toBe(200);
  return throughProxy(s, path, { method: "POST", headers: { origin }, body: "", forwardedProto });
}

/** The server's config: PUBLIC_URL as given, Sign in with Slack against the emulator (no Slack app). */
const configFor = (publicUrl: string, idp: () => OidcEmulator) => (): Config => {
  const base = testConfig({ crm: targetConfig("http://127.0.0.1:9") });
  return { ...base, publicUrl, browser: { ...base.browser, loginLinks: true, oidc: { ...CLIENT, issuer: idp().url, teamId: ALICE.teamId } } };
};

const startIdp = async (publicUrl: string): Promise<OidcEmulator> => {
  const idp = new OidcEmulator({ ...CLIENT, redirectUris: [`${publicUrl}/auth/slack/callback`] }, ALICE);
  await idp.start();
  return idp;
};

// PGlite only: what is under test is the browser door's cookies, redirects and origin check, which
// never differ by database.
describe("behind a TLS-terminating proxy, PUBLIC_URL https", () => {
  let idp: OidcEmulator;
  const s = useServer(pglite, {
    config: async () => {
      idp = await startIdp(HTTPS_PUBLIC);
      return configFor(HTTPS_PUBLIC, () => idp)();
    },
    run: { hostname: "127.0.0.1", sweepMs: 3_600_000 },
  });
  afterAll(() => idp?.stop());

  it("sets the session cookie Secure, HttpOnly and SameSite=Lax at a sign-in link, and redirects within the public origin", async () => {
    const login = await signInWithLink(s, HTTPS_PUBLIC, "https");
    expect(login.status, login.body).toBe(303);
    // Relative, so the browser stays on https://countersign.test whatever scheme the server saw.
    expect(login.location).toBe("/plans");
    expect(attributesOf(login, "cs_session")).toEqual(expect.arrayContaining(["secure", "httponly", "samesite=lax", "path=/"]));
  });

  it("sends Sign in with Slack back to https://countersign.test/auth/slack/callback, and the session it opens is Secure", async () => {
    const start = await throughProxy(s, "/auth/slack");
    expect(start.status, start.body).toBe(302);
    const authorize = new URL(start.location!);
    expect(authorize.origin).toBe(idp.url);
    expect(authorize.searchParams.get("redirect_uri")).toBe(`${HTTPS_PUBLIC}/auth/slack/callback`);
    expect(attributesOf(start, "cs_oidc_flow")).toEqual(expect.arrayContaining(["secure", "httponly", "samesite=lax", "path=/auth/slack"]));

    // The emulator answers the authorize request by sending the browser to the registered callback.
    const slackAnswer = await fetch(authorize, { redirect: "manual" });
    const callback = new URL(slackAnswer.headers.get("location")!);
    expect(callback.origin).toBe(HTTPS_PUBLIC);
    const flow = start.cookies.get("cs_oidc_flow")![0]!;
    const finish = await throughProxy(s, callback.pathname + callback.search, { headers: { cookie: flow } });
    expect(finish.status, finish.body).toBe(303);
    expect(attributesOf(finish, "cs_session")).toEqual(expect.arrayContaining(["secure", "httponly", "samesite=lax"]));
  });

  it("accepts a form from the https origin and refuses the same form from the http one the server itself is reached on", async () => {
    /** A fresh session and the logout form's body, CSRF token included. */
    const signedIn = async () => {
      const cookie = (await signInWithLink(s, HTTPS_PUBLIC, "https")).cookies.get("cs_session")![0]!;
      const page = await throughProxy(s, "/plans", { headers: { cookie } });
      const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1];
      expect(csrf, `no CSRF token on /plans (${page.status})`).toBeDefined();
      return { cookie, body: new URLSearchParams({ _csrf: csrf! }).toString() };
    };

    const first = await signedIn();
    const foreign = await throughProxy(s, "/logout", { method: "POST", headers: { cookie: first.cookie, origin: HTTP_PUBLIC }, body: first.body });
    expect(foreign.status).toBe(403);
    const ours = await throughProxy(s, "/logout", { method: "POST", headers: { cookie: first.cookie, origin: HTTPS_PUBLIC }, body: first.body });
    expect(ours.status, ours.body).toBe(303);
    expect(ours.location).toBe("/plans");

    // A browser that sends no Origin is judged by its Referer, against the same https origin.
    const second = await signedIn();
    const referred = await throughProxy(s, "/logout", {
      method: "POST",
      headers: { cookie: second.cookie, referer: `${HTTPS_PUBLIC}/plans` },
      body: second.body,
    });
    expect(referred.status, referred.body).toBe(303);
  });

  it("keeps the session cookie Secure on a request that reached the server without the proxy's X-Forwarded-Proto", async () => {
    const login = await signInWithLink(s, HTTPS_PUBLIC, undefined);
    expect(login.status, login.body).toBe(303);
    expect(attributesOf(login, "cs_session")).toContain("secure");
  });
});

describe("behind a plain-HTTP proxy, PUBLIC_URL http", () => {
  let idp: OidcEmulator;
  const s = useServer(pglite, {
    config: async () => {
      idp = await startIdp(HTTP_PUBLIC);
      return configFor(HTTP_PUBLIC, () => idp)();
    },
    run: { hostname: "127.0.0.1", sweepMs: 3_600_000 },
  });
  afterAll(() => idp?.stop());

  it("sets cookies without Secure (a browser would drop them over http), even when a client claims X-Forwarded-Proto https", async () => {
    for (const forwardedProto of [undefined, "https"] as const) {
      const login = await signInWithLink(s, HTTP_PUBLIC, forwardedProto);
      expect(login.status, login.body).toBe(303);
      const attributes = attributesOf(login, "cs_session");
      expect(attributes).toEqual(expect.arrayContaining(["httponly", "samesite=lax"]));
      expect(attributes).not.toContain("secure");
    }
    const start = await throughProxy(s, "/auth/slack", { forwardedProto: undefined });
    expect(new URL(start.location!).searchParams.get("redirect_uri")).toBe(`${HTTP_PUBLIC}/auth/slack/callback`);
    expect(attributesOf(start, "cs_oidc_flow")).not.toContain("secure");
  });
});
