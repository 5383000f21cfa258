import type { Context } from "hono";
import { setCookie } from "hono/cookie";
import { SESSION_TTL_MS } from "../service/sign-in/index.ts";

export const SESSION_COOKIE = "cs_session";

/** The one way a browser is handed its session, whichever sign-in proved who it is. */
export function setSessionCookie(c: Context, sessionId: string, secure: boolean): void {
  setCookie(c, SESSION_COOKIE, sessionId, { httpOnly: true, sameSite: "Lax", secure, path: "/", maxAge: SESSION_TTL_MS / 1000 });
}
