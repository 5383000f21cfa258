/** @jsxRuntime automatic @jsxImportSource hono/jsx */
import { Hono, type Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { streamSSE } from "hono/streaming";
import type { ServiceContext } from "../service/context.ts";
import { decide } from "../service/decide/index.ts";
import { ServiceError } from "../service/errors.ts";
import { consumeLoginLink, endSession, SESSION_TTL_MS, sessionOf, type WebSession } from "../service/sign-in/index.ts";
import { listForBrowser, parsePendingCursor, parseStatusFilter, reviewPlan, type ReviewedPlan } from "../service/review/index.ts";
import { maySeeLanes, outboxVisibility } from "../service/delivery/index.ts";
import { retryDelivery } from "../service/delivery/index.ts";
import { LANES_PATH, LanesPage } from "./lanes-page.tsx";
import { sameSecret } from "../util/bearer.ts";
import { declaresTooLargeForm, readForm, TOO_LARGE_FORM } from "../http/form-body.ts";
import { onDrain } from "../http/drain.ts";
import { HTTP_STATUS_OF } from "../contract/error-codes.ts";
import { APP_SCRIPT } from "./app-script.ts";
import { STYLESHEET } from "./layout.tsx";
import { LoginConfirmPage, MessagePage } from "./login-page.tsx";
import { refusalOf } from "./notices.ts";
import { countIfRefusal } from "../service/operations/index.ts";
import { PlanBody, PlanPage } from "./plan-page.tsx";
import { PlansPage, PlansTable } from "./plans-page.tsx";
import { SignInRequiredPage, type SignInOptions } from "./sign-in-page.tsx";
import { OIDC_START_PATH, oidcRoutes } from "./oidc-routes.tsx";
import type { SlackSignIn } from "../service/sign-in/index.ts";
import { SESSION_COOKIE, setSessionCookie } from "./session-cookie.ts";
import { isPlanId } from "../plan/schema.ts";
import { revokePlan } from "../service/decide/index.ts";
import { pauseCountersign, resumeCountersign } from "../service/operations/index.ts";
import { pauseBanner } from "./pause-banner.tsx";
import { editForm, editPlan } from "../service/edit/index.ts";
import { editRefusal, typedValues, type EditPanel } from "./edit-form.tsx";
import { BATCH_PATHS, batchRoutes } from "./batch-routes.tsx";
import { DELEGATION_PATHS, delegationRoutes } from "./delegation-routes.tsx";
import { pageNames } from "./page-names.ts";
import { peopleOnPlanPage } from "./plan-people.ts";
import { proposeUndo } from "../service/undo/index.ts";

const COOKIE = SESSION_COOKIE;

/** What the sign-in gate hands to the pages behind it. */
type WebEnv = { Variables: { reader: WebSession } };
/** Live pages re-check this often even without a signal. */
const LIVE_RECHECK_MS = 15_000;

/**
 * The browser door: server-rendered pages, decisions through the same `decide` as Slack with
 * `via: "web"`, sessions from one-time login links or Sign in with Slack. Every POST must carry the session's CSRF
 * token and come from our own origin.
 */
export function webRoutes(ctx: ServiceContext, options: SignInOptions & { oidc?: SlackSignIn | undefined }): Hono<WebEnv> {
  const web = new Hono<WebEnv>();
  const origin = new URL(ctx.config.publicUrl).origin;
  const secure = ctx.config.publicUrl.startsWith("https:");
  const session = (c: Context) => sessionOf(ctx, { sessionId: getCookie(c, COOKIE) });
  /** What the sign-in page offers: the ways this Countersign lets a browser in. */
  const signInOptions: SignInOptions = { loginLinks: options.loginLinks, oidcStartUrl: options.oidcStartUrl ?? (options.oidc ? OIDC_START_PATH : undefined) };

  web.use("*", async (c, next) => {
    await next();
    c.header(
      "Content-Security-Policy",
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    );
    c.header("X-Content-Type-Options", "nosniff");
    c.header("Referrer-Policy", "same-origin");
  });
  // The kill switch's banner on every page (and the pause form for admins on the plan list).
  web.use("*", pauseBanner(ctx, session));

  /** Cross-site POSTs are refused before anything else: Origin (or, lacking it, Referer) must be ours. */
  const sameOrigin = (c: Context) => {
    const from = c.req.header("origin") ?? refererOrigin(c.req.header("referer"));
    return from === origin;
  };
  const forbidden = (c: Context, text: string) => c.html(<MessagePage title="Refused" text={text} />, 403);
  /** A form refused before it was read whole closes the connection: the rest of the upload is never read. */
  const refusedForm = (c: Context, status: 400 | 413 | 415, text: string) =>
    c.html(<MessagePage title="Refused" text={text} />, status, status === 413 ? { connection: "close" } : {});
  /**
   * Every browser POST passes here first. Cheapest refusal first, and nothing unbounded before
   * the session: a declared body over the form cap, a foreign origin, no session; only then is
   * the body read, through the one capped form reader, and its CSRF token checked.
   */
  const checkPost = async (c: Context): Promise<{ session: WebSession; form: Record<string, string> } | Response> => {
    if (declaresTooLargeForm(c)) return refusedForm(c, 413, TOO_LARGE_FORM);
    if (!sameOrigin(c)) return forbidden(c, "This form was not sent from Countersign's own pages; nothing changed.");
    const who = await session(c);
    if (!who) return c.html(<SignInRequiredPage options={signInOptions} />, 401);
    const read = await readForm(c);
    if (!read.ok) return refusedForm(c, read.status, read.message);
    if (!sameSecret(read.form._csrf, who.csrfToken))
      return forbidden(c, "This form's security token is missing or stale; reload the page and try again. Nothing changed.");
    return { session: who, form: read.form };
  };

  /**
   * A review page is not public: every page and live stream under /plans needs a signed-in
   * person. A gate on the path (not a check in each route) so a page added later is closed too.
   */
  web.on("GET", ["/plans", "/plans/*", LANES_PATH, ...BATCH_PATHS, ...DELEGATION_PATHS], async (c, next) => {
    const who = await session(c);
    if (!who) return c.html(<SignInRequiredPage options={signInOptions} />, 401);
    c.set("reader", who);
    await next();
  });

  web.get("/assets/app.css", (c) => c.body(STYLESHEET, 200, { "content-type": "text/css; charset=utf-8", "cache-control": "public, max-age=300" }));
  web.get("/assets/app.js", (c) => c.body(APP_SCRIPT, 200, { "content-type": "text/javascript; charset=utf-8", "cache-control": "public, max-age=300" }));
  web.get("/", (c) => c.redirect("/plans"));

  web.get("/plans", async (c) => {
    const who = c.get("reader");
    const filter = c.req.query("status");
    const statuses = parseStatusFilter(filter);
    const pendingAfter = c.req.query("pending_after");
    let cursor: ReturnType<typeof parsePendingCursor> | undefined;
    try {
      cursor = pendingAfter ? parsePendingCursor(pendingAfter) : undefined;
    } catch (err) {
      if (err instanceof ServiceError) return c.html(<MessagePage title="No such page" text={err.message} />, 400);
      throw err;
    }
    // Read before the plans, so anything that changes after the read reaches the live stream.
    const version = await ctx.signals.version();
    const list = await listForBrowser(ctx, { reader: { userId: who.userId }, statuses, pendingAfter: cursor });
    const page = { filter: statuses ? filter : undefined, pendingAfter: cursor && pendingAfter };
    if (c.req.query("fragment")) return c.html(<PlansTable list={list} session={who} page={page} />);
    const seesLanes = await maySeeLanes(ctx, { reader: { userId: who.userId } });
    const { reader } = await pageNames(ctx, who);
    return c.html(<PlansPage list={list} session={reader} page={page} version={version} seesLanes={seesLanes} />);
  });

  /** The delivery lanes and dead deliveries, for those who read every plan (outboxVisibility says who). */
  web.get(LANES_PATH, async (c) => {
    const who = c.get("reader");
    try {
      const seen = await outboxVisibility(ctx, { reader: { userId: who.userId } });
      return c.html(<LanesPage seen={seen} session={(await pageNames(ctx, who)).reader} />);
    } catch (err) {
      if (err instanceof ServiceError && err.code === "not_a_reader")
        return c.html(<MessagePage title="You may not see the delivery lanes" text={err.message} />, 403);
      throw err;
    }
  });

  /** An admin's retry of a dead delivery; anyone else is told why not, and nothing changes. */
  web.post(`${LANES_PATH}/dead/:id/retry`, async (c) => {
    const checked = await checkPost(c);
    if (checked instanceof Response) return checked;
    const id = Number(c.req.param("id"));
    if (!Number.isSafeInteger(id) || id <= 0)
      return c.html(<MessagePage title="No such delivery" text={`'${c.req.param("id")}' is not a delivery's number.`} />, 404);
    try {
      await retryDelivery(ctx, { id, reader: { userId: checked.session.userId } });
    } catch (err) {
      if (!(err instanceof ServiceError)) throw err;
      if (err.code === "not_an_admin") return c.html(<MessagePage title="Only admins may retry a delivery" text={err.message} />, 403);
      if (err.code === "not_found") return c.html(<MessagePage title="No such dead delivery" text={err.message} />, 404);
      throw err;
    }
    return c.redirect(LANES_PATH, 303);
  });

  /** A stream outlives the request that opened it: it ends when the session does (signed out, expired). */
  const stillSignedIn = (c: Context) => async () => (await session(c)) !== undefined;

  web.get("/plans/live", (c) => liveStream(c, ctx, undefined, stillSignedIn(c)));

  /** The plan if this person may read it, else the page saying why not. */
  const readable = async (c: Context<WebEnv>, planId: string) => {
    try {
      return await reviewPlan(ctx, { planId, reader: { userId: c.get("reader").userId } });
    } catch (err) {
      if (!(err instanceof ServiceError)) throw err;
      if (err.code === "not_found") return c.html(<MessagePage title="No such plan" text={err.message} />, 404);
      if (err.code === "not_a_reader" || err.code === "approver_check_failed")
        return c.html(<MessagePage title="You may not read this plan" text={err.message} />, HTTP_STATUS_OF[err.code]);
      throw err;
    }
  };

  /** The plan page; `notice` only ever comes from a refused POST's own response, never from the URL. */
  const planPage = async (c: Context<WebEnv>, planId: string, refusal?: ReturnType<typeof refusalOf>, typed?: Record<string, string>) => {
    const who = c.get("reader");
    const version = isPlanId(planId) ? await ctx.signals.version(planId) : "";
    const reviewed = await readable(c, planId);
    if (reviewed instanceof Response) return reviewed;
    const { reader, names } = await pageNames(ctx, who, peopleOnPlanPage(reviewed, who.userId));
    const edit = await editPanelOf(reviewed, who.userId, typed);
    if (c.req.query("fragment")) return c.html(<PlanBody reviewed={reviewed} session={reader} names={names} edit={edit} />);
    return c.html(
      <PlanPage reviewed={reviewed} session={reader} names={names} edit={edit} version={version} notice={refusal?.notice} />,
      refusal?.status ?? 200,
    );
  };

  /** The edit form, for a person who may edit this plan now (one who approved it may: no approval carries over). */
  const editPanelOf = async (reviewed: ReviewedPlan, userId: string, typed: Record<string, string> | undefined): Promise<EditPanel | undefined> => {
    const why = reviewed.plan.whyNotDecide;
    if ((why && why.code !== "already_voted") || reviewed.plan.plan.policy.edits === false) return undefined;
    try {
      return { form: await editForm(ctx, { planId: reviewed.plan.id, hash: reviewed.plan.hash, person: { userId, via: "web" } }), typed };
    } catch (err) {
      if (err instanceof ServiceError) return undefined;
      throw err;
    }
  };

  web.get("/plans/:id", (c) => planPage(c, c.req.param("id")));

  web.get("/plans/:id/live", async (c) => {
    const planId = c.req.param("id");
    const reviewed = await readable(c, planId);
    return reviewed instanceof Response ? reviewed : liveStream(c, ctx, planId, stillSignedIn(c));
  });

  /**
   * A person acting on a plan from its page (decide, revoke). A refusal changed nothing, so it is
   * answered right here (a reload repeats a harmless refusal) and only to the person who caused
   * it. A recorded act redirects, and the page then says so from the plan's own record.
   */
  const actOnPlan = (act: (planId: string, userId: string, form: Record<string, string>) => Promise<unknown>) => async (c: Context<WebEnv>) => {
    const checked = await checkPost(c);
    if (checked instanceof Response) return checked;
    const planId = c.req.param("id")!;
    try {
      await act(planId, checked.session.userId, checked.form);
    } catch (err) {
      const refusal = refusalOf(err);
      if (refusal) await countIfRefusal(ctx, err);
      if (!refusal) {
        if (err instanceof ServiceError && err.code === "not_found") return c.html(<MessagePage title="No such plan" text={err.message} />, 404);
        throw err;
      }
      c.set("reader", checked.session);
      return planPage(c, planId, refusal);
    }
    return c.redirect(`/plans/${planId}`, 303);
  };

  for (const verdict of ["approve", "reject"] as const) {
    web.post(
      `/plans/:id/${verdict}`,
      actOnPlan((planId, userId, form) => decide(ctx, { planId, hash: form.hash ?? "", actor: { userId, via: "web" }, verdict, reason: form.reason })),
    );
  }

  /**
   * Edit before approve: the values typed become a new version, whose page comes next. A refusal
   * is shown on this plan's page, with the form open again on what was typed.
   */
  web.post("/plans/:id/edit", async (c) => {
    const checked = await checkPost(c);
    if (checked instanceof Response) return checked;
    const planId = c.req.param("id");
    const typed = typedValues(checked.form);
    try {
      const { plan } = await editPlan(ctx, { planId, hash: checked.form.hash ?? "", person: { userId: checked.session.userId, via: "web" }, values: typed });
      return c.redirect(`/plans/${plan.id}`, 303);
    } catch (err) {
      const refusal = editRefusal(err);
      if (!refusal) {
        if (err instanceof ServiceError && err.code === "not_found") return c.html(<MessagePage title="No such plan" text={err.message} />, 404);
        throw err;
      }
      await countIfRefusal(ctx, err);
      c.set("reader", checked.session);
      return planPage(c, planId, refusal, typed);
    }
  });

  /** Revoke an approved plan no executor has taken; a refusal is shown on the plan page, like a decision's. */
  web.post(
    "/plans/:id/revoke",
    actOnPlan((planId, userId, form) => revokePlan(ctx, { planId, person: { userId, via: "web" }, reason: form.reason })),
  );

  /**
   * Propose undo: the undo's page comes next. While an undo of the plan is open, a second ask
   * leads to that one; any other refusal is shown on this plan's page.
   */
  web.post("/plans/:id/undo", async (c) => {
    const checked = await checkPost(c);
    if (checked instanceof Response) return checked;
    const planId = c.req.param("id");
    try {
      const { plan } = await proposeUndo(ctx, { planId, asker: { person: { userId: checked.session.userId, via: "web" } } });
      return c.redirect(`/plans/${plan.id}`, 303);
    } catch (err) {
      if (err instanceof ServiceError && err.code === "undo_open" && typeof err.details?.planId === "string")
        return c.redirect(`/plans/${err.details.planId}`, 303);
      const refusal = refusalOf(err);
      if (!refusal) {
        if (err instanceof ServiceError && err.code === "not_found") return c.html(<MessagePage title="No such plan" text={err.message} />, 404);
        throw err;
      }
      await countIfRefusal(ctx, err);
      c.set("reader", checked.session);
      return planPage(c, planId, refusal);
    }
  });

  /** The kill switch from the browser: admins only (anyone else gets 403 naming why), with the session's CSRF token. */
  for (const verb of ["pause", "resume"] as const) {
    web.post(`/${verb}`, async (c) => {
      const checked = await checkPost(c);
      if (checked instanceof Response) return checked;
      const operator = { via: "web", userId: checked.session.userId } as const;
      try {
        if (verb === "pause") await pauseCountersign(ctx, { operator, reason: checked.form.reason });
        else await resumeCountersign(ctx, { operator });
      } catch (err) {
        if (!(err instanceof ServiceError)) throw err;
        const title = verb === "pause" ? "Countersign was not paused" : "Countersign was not resumed";
        return c.html(<MessagePage title={title} text={err.message} />, HTTP_STATUS_OF[err.code]);
      }
      return c.redirect("/plans", 303);
    });
  }

  web.get("/login/:token", (c) => {
    if (!options.loginLinks) return c.html(<MessagePage title="Sign-in links are off" text="This Countersign does not accept sign-in links." />, 403);
    return c.html(<LoginConfirmPage token={c.req.param("token")} />);
  });

  web.post("/login/:token", async (c) => {
    if (!options.loginLinks) return c.html(<MessagePage title="Sign-in links are off" text="This Countersign does not accept sign-in links." />, 403);
    if (declaresTooLargeForm(c)) return refusedForm(c, 413, TOO_LARGE_FORM);
    if (!sameOrigin(c)) return forbidden(c, "This sign-in was not sent from Countersign's own page.");
    try {
      const { sessionId } = await consumeLoginLink(ctx, { token: c.req.param("token") });
      // A new session id at every login: a cookie planted before login is worth nothing after it.
      setSessionCookie(c, sessionId, secure);
      return c.redirect("/plans", 303);
    } catch (err) {
      if (err instanceof ServiceError) return c.html(<MessagePage title="This link does not work" text={err.message} />, 403);
      throw err;
    }
  });

  web.post("/logout", async (c) => {
    const checked = await checkPost(c);
    if (checked instanceof Response) return checked;
    await endSession(ctx, { sessionId: getCookie(c, COOKIE)! });
    deleteCookie(c, COOKIE, { path: "/", secure });
    return c.redirect("/plans", 303);
  });

  // Batches of alike plans: opened from the list, decided through the same checks as every form.
  batchRoutes(web, ctx, checkPost);
  delegationRoutes(web, ctx, checkPost);

  if (options.oidc) web.route("/", oidcRoutes(options.oidc, { secure, origin }));
  return web;
}

/**
 * Server-sent events: "changed" whenever the plan (or, for the list, any plan) has moved past the
 * version the page was rendered at (`?v=`, or after a reconnect the browser's Last-Event-ID). The
 * version is compared on connect, so a change between page load and connect arrives at once
 * instead of at the next timer; each wait is armed before the version is read, so no signal
 * falls between the two.
 */
function liveStream(c: Context, ctx: ServiceContext, planId: string | undefined, stillSignedIn: () => Promise<boolean>): Response {
  return streamSSE(c, async (stream) => {
    const closed = new AbortController();
    stream.onAbort(() => closed.abort());
    // A stopping replica ends the stream; the browser reconnects, through the load balancer, to another.
    const stopHeeding = onDrain(c, () => closed.abort());
    let seen = c.req.header("last-event-id") ?? c.req.query("v");
    let first = true;
    try {
      while (!closed.signal.aborted) {
        if (!first && !(await stillSignedIn())) break;
        const woken = planId ? ctx.signals.wait(planId, LIVE_RECHECK_MS, closed.signal) : ctx.signals.waitAny(LIVE_RECHECK_MS, closed.signal);
        const now = await ctx.signals.version(planId);
        if (now !== seen) {
          seen = now;
          await stream.writeSSE({ event: "changed", id: now, data: now });
        } else if (first) {
          await stream.writeSSE({ event: "ready", id: now, data: now });
        }
        first = false;
        // A timeout re-reads the version, so a lost notification costs seconds, never staleness.
        await woken;
      }
    } finally {
      stopHeeding();
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
