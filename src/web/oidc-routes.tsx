/** @jsxRuntime automatic @jsxImportSource hono/jsx */
import { Hono, type Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { ServiceError } from "../service/errors.ts";
import { FLOW_TTL_SECONDS } from "../service/sign-in/index.ts";
import { SignInUnavailable, type SlackSignIn } from "../service/sign-in/index.ts";
import { MessagePage } from "./login-page.tsx";
import { setSessionCookie } from "./session-cookie.ts";

export const OIDC_START_PATH = "/auth/slack";
const FLOW_COOKIE = "cs_oidc_flow";
// Lax, not Strict: the callback is a top-level navigation from Slack, which Strict would strip the cookie from.
const flowCookieOptions = (secure: boolean) => ({ httpOnly: true, sameSite: "Lax" as const, secure, path: OIDC_START_PATH, maxAge: FLOW_TTL_SECONDS });

/**
 * Sign in with Slack: `GET /auth/slack` sends the browser to Slack with a sealed flow cookie;
 * `GET /auth/slack/callback` hands Slack's answer to the service, which opens a session or says
 * what was wrong (403; no session). `?returnTo=/plans/…` comes back to that page.
 */
export function oidcRoutes(signIn: SlackSignIn, options: { secure: boolean; origin: string }): Hono {
  const web = new Hono();
  const unavailable = (c: Context, err: SignInUnavailable) =>
    c.html(<MessagePage title="Sign in with Slack is unavailable" text={`Countersign ${err.message}. Try again in a minute; nothing was signed in.`} />, 502);

  web.get(OIDC_START_PATH, async (c) => {
    try {
      const { authorizeUrl, flowCookie } = await signIn.start(c.req.query("returnTo") ?? sameOriginPath(c.req.header("referer"), options.origin));
      setCookie(c, FLOW_COOKIE, flowCookie, flowCookieOptions(options.secure));
      return c.redirect(authorizeUrl, 302);
    } catch (err) {
      if (err instanceof SignInUnavailable) return unavailable(c, err);
      throw err;
    }
  });

  web.get(`${OIDC_START_PATH}/callback`, async (c) => {
    const flowCookie = getCookie(c, FLOW_COOKIE);
    // Spent whatever happens next: a retry starts a new flow rather than replaying this one.
    deleteCookie(c, FLOW_COOKIE, { path: OIDC_START_PATH, secure: options.secure });
    try {
      const { sessionId, returnTo } = await signIn.finish(new URL(c.req.url).searchParams, flowCookie);
      setSessionCookie(c, sessionId, options.secure);
      return c.redirect(returnTo, 303);
    } catch (err) {
      if (err instanceof ServiceError && err.code === "unauthorized") {
        return c.html(<MessagePage title="Sign-in refused" text={`Sign in with Slack was refused: ${err.message}. Nothing was signed in.`} />, 403);
      }
      if (err instanceof SignInUnavailable) return unavailable(c, err);
      throw err;
    }
  });

  return web;
}

/**
 * The sign-in page is served at the address the person asked for, so its link's Referer is where
 * they wanted to go (sent in full only to our own origin: Referrer-Policy same-origin).
 */
function sameOriginPath(referer: string | undefined, origin: string): string | undefined {
  try {
    const url = referer ? new URL(referer) : undefined;
    return url?.origin === origin ? url.pathname + url.search : undefined;
  } catch {
    return undefined;
  }
}
