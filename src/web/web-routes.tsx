/** @jsxRuntime automatic @jsxImportSource hono/jsx */
import { Hono, type Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { streamSSE } from "hono/streaming";
import { groupsOfApprover } from "../service/approver-groups.ts";
import type { ServiceContext } from "../service/context.ts";
import { decide } from "../service/decide.ts";
import { ServiceError } from "../service/errors.ts";
import { consumeLoginLink, endSession, SESSION_TTL_MS, sessionOf, type WebSession } from "../service/login-links.ts";
import { listPlansForReview, parseStatusFilter, reviewPlan } from "../service/review-plan.ts";
import { sameSecret } from "../server/bearer.ts";
import { APP_SCRIPT } from "./app-script.ts";
import { STYLESHEET } from "./layout.tsx";
import { LoginConfirmPage, MessagePage } from "./login-page.tsx";
import { noticeCodeOf, noticeFor } from "./notices.ts";
import { PlanBody, PlanPage } from "./plan-page.tsx";
import { PlansPage, PlansTable } from "./plans-page.tsx";

const COOKIE = "cs_session";
/** Live pages re-check this often even without a signal. */
const LIVE_RECHECK_MS = 15_000;

/**
 * The browser door: server-rendered pages, decisions through the same `decide` as Slack with
 * `via: "web"`, sessions from one-time login links. Every POST must carry the session's CSRF
 * token and come from our own origin.
 */
export function webRoutes(ctx: ServiceContext, options: { loginLinks: boolean }): Hono {
  const web = new Hono();
  const origin = new URL(ctx.config.publicUrl).origin;
  const secure = ctx.config.publicUrl.startsWith("https:");
  const session = (c: Context) => sessionOf(ctx, getCookie(c, COOKIE));
  /** The approver groups the signed-in person is in, for showing buttons; the decision itself checks again. */
  const memberOf = async (who: WebSession | undefined, plans: { plan: { policy: { approvers: string[] } } }[]): Promise<string[]> => {
    if (!who) return [];
    const approvers = [...new Set(plans.flatMap((p) => p.plan.policy.approvers))];
    return groupsOfApprover(ctx, who.userId, { approvers: approvers.filter((a) => a.startsWith("S")) }).catch(() => []);
  };

  web.use("*", async (c, next) => {
    await next();
    c.header("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'");
    c.header("X-Content-Type-Options", "nosniff");
    c.header("Referrer-Policy", "same-origin");
  });

  /** Cross-site POSTs are refused before anything else: Origin (or, lacking it, Referer) must be ours. */
  const sameOrigin = (c: Context) => {
    const from = c.req.header("origin") ?? refererOrigin(c.req.header("referer"));
    return from === origin;
  };
  const forbidden = (c: Context, text: string) => c.html(<MessagePage title="Refused" text={text} />, 403);
  const checkPost = async (c: Context): Promise<{ session: WebSession; form: Record<string, string> } | Response> => {
    if (!sameOrigin(c)) return forbidden(c, "This form was not sent from Countersign's own pages; nothing changed.");
    const who = await session(c);
    if (!who) return forbidden(c, "You are not signed in; nothing changed. Use /countersign login in Slack.");
    const form = Object.fromEntries(Object.entries(await c.req.parseBody()).map(([k, v]) => [k, String(v)]));
    if (!sameSecret(form._csrf, who.csrfToken)) return forbidden(c, "This form's security token is missing or stale; reload the page and try again. Nothing changed.");
    return { session: who, form };
  };

  web.get("/assets/app.css", (c) => c.body(STYLESHEET, 200, { "content-type": "text/css; charset=utf-8", "cache-control": "public, max-age=300" }));
  web.get("/assets/app.js", (c) => c.body(APP_SCRIPT, 200, { "content-type": "text/javascript; charset=utf-8", "cache-control": "public, max-age=300" }));
  web.get("/", (c) => c.redirect("/plans"));

  web.get("/plans", async (c) => {
    const who = await session(c);
    const filter = c.req.query("status");
    const plans = await listPlansForReview(ctx, { ...(parseStatusFilter(filter) ? { statuses: parseStatusFilter(filter)! } : {}) });
    const groups = await memberOf(who, plans);
    if (c.req.query("fragment")) return c.html(<PlansTable plans={plans} session={who} memberOf={groups} />);
    return c.html(<PlansPage plans={plans} session={who} filter={parseStatusFilter(filter) ? filter : undefined} memberOf={groups} />);
  });

  web.get("/plans/live", (c) => liveStream(c, ctx, undefined));

  web.get("/plans/:id", async (c) => {
    const who = await session(c);
    let reviewed;
    try {
      reviewed = await reviewPlan(ctx, c.req.param("id"));
    } catch (err) {
      if (err instanceof ServiceError && err.code === "not_found") return c.html(<MessagePage title="No such plan" text={err.message} />, 404);
      throw err;
    }
    const groups = await memberOf(who, [reviewed.plan]);
    if (c.req.query("fragment")) return c.html(<PlanBody reviewed={reviewed} session={who} memberOf={groups} />);
    return c.html(<PlanPage reviewed={reviewed} session={who} memberOf={groups} notice={noticeFor(c.req.query("notice") ?? "")} />);
  });

  web.get("/plans/:id/live", (c) => liveStream(c, ctx, c.req.param("id")));

  for (const verdict of ["approve", "reject"] as const) {
    web.post(`/plans/:id/${verdict}`, async (c) => {
      const checked = await checkPost(c);
      if (checked instanceof Response) return checked;
      const planId = c.req.param("id");
      let notice: string = verdict === "approve" ? "approved" : "rejected";
      try {
        await decide(ctx, { planId, hash: checked.form.hash ?? "", actor: { userId: checked.session.userId, via: "web" }, verdict, reason: checked.form.reason });
      } catch (err) {
        notice = noticeCodeOf(err);
        if (notice === "not_found") return c.html(<MessagePage title="No such plan" text={(err as Error).message} />, 404);
        if (notice === "internal") throw err;
      }
      return c.redirect(`/plans/${planId}?notice=${notice}`, 303);
    });
  }

  web.get("/login/:token", (c) => {
    if (!options.loginLinks) return c.html(<MessagePage title="Sign-in links are off" text="This Countersign does not accept sign-in links." />, 403);
    return c.html(<LoginConfirmPage token={c.req.param("token")} />);
  });

  web.post("/login/:token", async (c) => {
    if (!options.loginLinks) return c.html(<MessagePage title="Sign-in links are off" text="This Countersign does not accept sign-in links." />, 403);
    if (!sameOrigin(c)) return forbidden(c, "This sign-in was not sent from Countersign's own page.");
    try {
      const { sessionId } = await consumeLoginLink(ctx, c.req.param("token"));
      // A new session id at every login: a cookie planted before login is worth nothing after it.
      setCookie(c, COOKIE, sessionId, { httpOnly: true, sameSite: "Lax", secure, path: "/", maxAge: SESSION_TTL_MS / 1000 });
      return c.redirect("/plans", 303);
    } catch (err) {
      if (err instanceof ServiceError) return c.html(<MessagePage title="This link does not work" text={err.message} />, 403);
      throw err;
    }
  });

  web.post("/logout", async (c) => {
    const checked = await checkPost(c);
    if (checked instanceof Response) return checked;
    await endSession(ctx, getCookie(c, COOKIE)!);
    deleteCookie(c, COOKIE, { path: "/", secure });
    return c.redirect("/plans", 303);
  });

  return web;
}

/** Server-sent events: "changed" whenever the plan (or, for the list, any plan) may have changed. */
function liveStream(c: Context, ctx: ServiceContext, planId: string | undefined): Response {
  return streamSSE(c, async (stream) => {
    const closed = new AbortController();
    stream.onAbort(() => closed.abort());
    await stream.writeSSE({ event: "ready", data: "" });
    while (!closed.signal.aborted) {
      // A timeout counts as a change too: a lost notification then costs seconds, never staleness.
      await (planId ? ctx.signals.wait(planId, LIVE_RECHECK_MS, closed.signal) : ctx.signals.waitAny(LIVE_RECHECK_MS, closed.signal));
      if (closed.signal.aborted) break;
      await stream.writeSSE({ event: "changed", data: new Date().toISOString() });
    }
  });
}

function refererOrigin(referer: string | undefined): string | undefined {
  try {
    return referer ? new URL(referer).origin : undefined;
  } catch {
    return undefined;
  }
}
