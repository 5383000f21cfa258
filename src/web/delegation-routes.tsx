/** @jsxRuntime automatic @jsxImportSource hono/jsx */
import type { Context, Hono } from "hono";
import { HTTP_STATUS_OF } from "../contract/error-codes.ts";
import type { ServiceContext } from "../service/context.ts";
import { createDelegation, endDelegation, listDelegations } from "../service/delegation/index.ts";
import { ServiceError } from "../service/errors.ts";
import type { WebSession } from "../service/sign-in/index.ts";
import { DELEGATIONS_PATH, DelegationsPage } from "./delegation-page.tsx";
import type { Notice } from "./notices.ts";
import { pageNames } from "./page-names.ts";

type WebEnv = { Variables: { reader: WebSession } };

/** Every browser POST's checks (web-routes.tsx checkPost): size, origin, session, the capped form reader, CSRF. */
type CheckPost = (c: Context) => Promise<{ session: WebSession; form: Record<string, string> } | Response>;

/** The page paths of delegations, behind the sign-in gate like every plan page. */
export const DELEGATION_PATHS = [DELEGATIONS_PATH];

/**
 * Delegating in the browser: the page lists what the reader gave and holds; its form delegates
 * the reader's own approvals (through the same verb as `/countersign delegate`), and each
 * delegation's button ends it. A refusal comes back on the page, with what was typed.
 */
export function delegationRoutes(web: Hono<WebEnv>, ctx: ServiceContext, checkPost: CheckPost): void {
  const page = async (
    c: Context,
    session: WebSession,
    extra: { notice?: Notice; typed?: Record<string, string> } = {},
    status: 200 | 400 | 403 | 404 | 409 | 503 = 200,
  ) => {
    const delegations = await listDelegations(ctx, { person: session.userId });
    const { reader, names } = await pageNames(
      ctx,
      session,
      delegations.flatMap((d) => [d.delegator, d.delegate]),
    );
    return c.html(<DelegationsPage session={reader} delegations={delegations} targets={Object.keys(ctx.config.targets)} names={names} {...extra} />, status);
  };

  web.get(DELEGATIONS_PATH, (c) => page(c, c.get("reader")));

  web.post(DELEGATIONS_PATH, async (c) => {
    const checked = await checkPost(c);
    if (checked instanceof Response) return checked;
    const { form, session } = checked;
    const targets = (form.targets ?? "").split(/[\s,]+/).filter((t) => t !== "");
    try {
      const made = await createDelegation(ctx, {
        delegator: session.userId,
        delegate: (form.delegate ?? "").trim(),
        until: (form.until ?? "").trim(),
        ...(targets.length > 0 ? { targets } : {}),
        by: { userId: session.userId, via: "web" },
      });
      return page(c, session, {
        notice: { kind: "ok", text: `${made.delegate} decides in your place until ${made.until} (the end of your day, ${made.timeZone}).` },
      });
    } catch (err) {
      if (!(err instanceof ServiceError)) throw err;
      return page(c, session, { notice: { kind: "bad", text: sentence(err.message) }, typed: form }, statusOf(err));
    }
  });

  web.post(`${DELEGATIONS_PATH}/:id/end`, async (c) => {
    const checked = await checkPost(c);
    if (checked instanceof Response) return checked;
    try {
      const ended = await endDelegation(ctx, { id: c.req.param("id"), by: { userId: checked.session.userId, via: "web" } });
      return page(c, checked.session, { notice: { kind: "ok", text: `Ended: ${ended.delegate} no longer decides for ${ended.delegator}.` } });
    } catch (err) {
      if (!(err instanceof ServiceError)) throw err;
      return page(c, checked.session, { notice: { kind: "bad", text: sentence(err.message) } }, statusOf(err));
    }
  });
}

function statusOf(err: ServiceError): 400 | 403 | 404 | 409 | 503 {
  const status = HTTP_STATUS_OF[err.code];
  return status === 403 || status === 404 || status === 409 || status === 503 ? status : 400;
}

const sentence = (text: string) => `${text[0]!.toUpperCase()}${text.slice(1)}.`;
