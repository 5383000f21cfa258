/** @jsxRuntime automatic @jsxImportSource hono/jsx */
import type { Context, Hono } from "hono";
import { HTTP_STATUS_OF } from "../contract/error-codes.ts";
import { batchFor, decideBatch, openBatch } from "../service/batch/index.ts";
import type { ServiceContext } from "../service/context.ts";
import { ServiceError } from "../service/errors.ts";
import { countIfRefusal } from "../service/operations/index.ts";
import type { WebSession } from "../service/sign-in/index.ts";
import { BatchDecidedPage, BatchPage } from "./batch-page.tsx";
import { MessagePage } from "./login-page.tsx";

type WebEnv = { Variables: { reader: WebSession } };

/** Every browser POST's checks (web-routes.tsx checkPost): size, origin, session, the capped form reader, CSRF. */
type CheckPost = (c: Context) => Promise<{ session: WebSession; form: Record<string, string> } | Response>;

/** The page paths of batches, behind the sign-in gate like every plan page. */
export const BATCH_PATHS = ["/batches/*"];

/**
 * Batches of alike plans in the browser: `/plans/:id/alike` opens one (the oldest alike plans the
 * reader may decide, recorded with their hashes) and shows it at `/batches/:id`; its forms decide
 * every plan of it through the batch verb, each by the one decision rule, and answer per plan.
 */
export function batchRoutes(web: Hono<WebEnv>, ctx: ServiceContext, checkPost: CheckPost): void {
  web.get("/plans/:id/alike", async (c) => {
    const who = c.get("reader");
    try {
      const batch = await openBatch(ctx, { reviewer: { userId: who.userId, via: "web" }, like: c.req.param("id") });
      return c.redirect(`/batches/${batch.id}`, 303);
    } catch (err) {
      return refused(c, err, "Nothing to review together");
    }
  });

  web.get("/batches/:id", async (c) => {
    const who = c.get("reader");
    try {
      return c.html(<BatchPage batch={await batchFor(ctx, { batchId: c.req.param("id"), userId: who.userId })} session={who} />);
    } catch (err) {
      return refused(c, err, "This batch cannot be shown");
    }
  });

  for (const verdict of ["approve", "reject"] as const) {
    web.post(`/batches/:id/${verdict}`, async (c) => {
      const checked = await checkPost(c);
      if (checked instanceof Response) return checked;
      try {
        const decision = await decideBatch(ctx, {
          batchId: c.req.param("id"),
          actor: { userId: checked.session.userId, via: "web" },
          verdict,
          reason: checked.form.reason,
        });
        return c.html(<BatchDecidedPage decision={decision} session={checked.session} />);
      } catch (err) {
        await countIfRefusal(ctx, err);
        return refused(c, err, "Nothing was decided");
      }
    });
  }
}

/** A refusal of the batch as a whole (expired, not the reader's, nothing alike waits) as a page with its status; a fault is thrown on. */
function refused(c: Context, err: unknown, title: string): Response | Promise<Response> {
  if (!(err instanceof ServiceError)) throw err;
  const text =
    err.code === "batch_expired"
      ? "This batch expired ten minutes after it was opened; nothing was decided through it. Open the like plans again from the list to review them as they are now."
      : `${err.message[0]!.toUpperCase()}${err.message.slice(1)}.`;
  return c.html(<MessagePage title={title} text={text} />, HTTP_STATUS_OF[err.code] ?? 400);
}
