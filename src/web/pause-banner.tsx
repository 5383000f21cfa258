/** @jsxRuntime automatic @jsxImportSource hono/jsx */
import type { Context, MiddlewareHandler } from "hono";
import type { ServiceContext } from "../service/context.ts";
import type { WebSession } from "../service/sign-in/index.ts";
import { isAdmin, pauseNow } from "../service/operations/index.ts";
import { type PauseState } from "../service/context.ts";
import { MAX_STATED_REASON_CHARS } from "../service/access/index.ts";

/** The kill switch as a page shows it: everyone sees that it is on; admins may lift it. */
export function PauseBanner(props: { pause: PauseState; csrf?: string | undefined }) {
  const { pause } = props;
  return (
    <div class="notice bad pause-banner" role="status">
      <strong>Countersign is paused</strong> since <time datetime={pause.since}>{pause.since.replace("T", " ").slice(0, 19)} UTC</time> by{" "}
      <code>{pause.by}</code>
      {pause.via === "cli" ? " (CLI)" : ""}: {pause.reason}. No executor takes a plan until it is resumed; plans can still be decided, and approved ones wait.
      {props.csrf ? (
        <form method="post" action="/resume" class="inline">
          <input type="hidden" name="_csrf" value={props.csrf} />
          <button type="submit">Resume</button>
        </form>
      ) : null}
    </div>
  );
}

/** An admin's way to pull the kill switch, offered on the plan list. */
export function PauseForm(props: { csrf: string }) {
  return (
    <details class="card pause-form">
      <summary>Pause Countersign (kill switch)</summary>
      <form method="post" action="/pause" class="inline">
        <input type="hidden" name="_csrf" value={props.csrf} />
        <label for="pause-reason" class="muted">
          Reason
        </label>
        <textarea
          id="pause-reason"
          name="reason"
          required
          maxlength={MAX_STATED_REASON_CHARS}
          placeholder="Why stop every executor? Reviewers and agents see this."
        ></textarea>
        <button type="submit" class="reject">
          Pause
        </button>
      </form>
    </details>
  );
}

/**
 * Puts the pause banner at the top of every full page (those rendered in the layout's <main>), so
 * a page added later shows it too, and the pause form for admins on the plan list. Fragments and
 * streams have no <main> and are left alone. The state is this replica's watch (no query).
 */
export function pauseBanner(ctx: ServiceContext, sessionOf: (c: Context) => Promise<WebSession | undefined>): MiddlewareHandler {
  return async (c, next) => {
    await next();
    if (c.req.method !== "GET" && c.res.status < 400) return;
    if (!c.res.headers.get("content-type")?.startsWith("text/html")) return;
    const pause = await pauseNow(ctx);
    const onList = c.req.path === "/plans" && !c.req.query("fragment");
    if (!pause && !onList) return;
    const who = await sessionOf(c);
    const admin = who !== undefined && (await isAdmin(ctx, who.userId));
    const csrf = admin ? who.csrfToken : undefined;
    const insert = pause ? <PauseBanner pause={pause} csrf={csrf} /> : csrf ? <PauseForm csrf={csrf} /> : undefined;
    if (!insert) return;
    const html = await c.res.text();
    const at = html.indexOf("<main>");
    const body = at < 0 ? html : html.slice(0, at + "<main>".length) + (await insert.toString()) + html.slice(at + "<main>".length);
    const headers = new Headers(c.res.headers);
    headers.delete("content-length");
    c.res = new Response(body, { status: c.res.status, headers });
  };
}
