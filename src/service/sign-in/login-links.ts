import { createHash, randomBytes } from "node:crypto";
import { and, eq, gt, isNull } from "drizzle-orm";
import { SlackUserId } from "../../plan/schema.ts";
import type { Tx } from "../../store/db.ts";
import { loginLinks, webSessions } from "../../store/schema.ts";
import { appendAudit } from "../records/audit.ts";
import type { ServiceContext } from "../context.ts";
import { ServiceError } from "../errors.ts";

export const LOGIN_LINK_TTL_MS = 5 * 60_000;
export const SESSION_TTL_MS = 12 * 60 * 60_000;

const sha256 = (value: string) => createHash("sha256").update(value).digest("hex");

/**
 * A one-time link that signs a browser in as this Slack user: valid five minutes, usable once,
 * audited. Slack's `/countersign login` and `countersign login-link` both make them.
 */
export async function createLoginLink(
  ctx: Pick<ServiceContext, "database" | "clock" | "config">,
  input: { userId: string; name?: string | undefined; via: "slack" | "cli" },
): Promise<{ url: string; expiresAt: string }> {
  if (!SlackUserId.safeParse(input.userId).success) {
    throw new ServiceError("invalid_request", `'${input.userId}' is not a Slack user id (like U024BE7LH)`);
  }
  const token = randomBytes(32).toString("base64url");
  const now = ctx.clock();
  const expiresAt = new Date(now.getTime() + LOGIN_LINK_TTL_MS);
  await ctx.database.db.transaction(async (tx) => {
    await tx.insert(loginLinks).values({ tokenHash: sha256(token), userId: input.userId, name: input.name ?? null, via: input.via, createdAt: now, expiresAt });
    await appendAudit(tx, {
      planId: null,
      type: "login_link.created",
      actor: input.via === "slack" ? { type: "user", userId: input.userId, via: "slack" } : { type: "system", process: "cli" },
      data: { userId: input.userId, expiresAt: expiresAt.toISOString() },
      at: now,
    });
  });
  return { url: `${ctx.config.publicUrl}/login/${token}`, expiresAt: expiresAt.toISOString() };
}

export interface WebSession {
  userId: string;
  name: string | null;
  csrfToken: string;
}

/**
 * Spends a login link (once: a conditional UPDATE) and opens a new session for its user. Every
 * login gets a fresh session id, so a session fixed before login is worth nothing after it.
 */
export async function consumeLoginLink(
  ctx: Pick<ServiceContext, "database" | "clock">,
  { token }: { token: string },
): Promise<{ sessionId: string; session: WebSession }> {
  const now = ctx.clock();
  return ctx.database.db.transaction(async (tx) => {
    const [link] = await tx
      .update(loginLinks)
      .set({ usedAt: now })
      .where(and(eq(loginLinks.tokenHash, sha256(token)), isNull(loginLinks.usedAt), gt(loginLinks.expiresAt, now)))
      .returning();
    if (!link) throw new ServiceError("unauthorized", "this sign-in link was already used or has expired; ask for a new one with /countersign login");
    return openSession(tx, { userId: link.userId, name: link.name, via: link.via, now });
  });
}

/**
 * Opens a browser session for a person whose identity a sign-in (link or Sign in with Slack) has
 * just proven, audited with how they signed in. Always a fresh id: see consumeLoginLink.
 */
export async function openSession(
  tx: Tx,
  input: { userId: string; name: string | null; via: string; now: Date },
): Promise<{ sessionId: string; session: WebSession }> {
  const sessionId = randomBytes(32).toString("base64url");
  const session: WebSession = { userId: input.userId, name: input.name, csrfToken: randomBytes(24).toString("base64url") };
  await tx.insert(webSessions).values({
    idHash: sha256(sessionId),
    userId: session.userId,
    name: session.name,
    csrfToken: session.csrfToken,
    createdAt: input.now,
    expiresAt: new Date(input.now.getTime() + SESSION_TTL_MS),
  });
  await appendAudit(tx, {
    planId: null,
    type: "session.created",
    actor: { type: "user", userId: input.userId, via: "web" },
    data: { via: input.via },
    at: input.now,
  });
  return { sessionId, session };
}

/** The live session a browser's cookie names; undefined when it names none (no cookie, signed out, expired). */
export async function sessionOf(
  ctx: Pick<ServiceContext, "database" | "clock">,
  { sessionId }: { sessionId: string | undefined },
): Promise<WebSession | undefined> {
  if (!sessionId) return undefined;
  const [row] = await ctx.database.db
    .select()
    .from(webSessions)
    .where(and(eq(webSessions.idHash, sha256(sessionId)), isNull(webSessions.endedAt), gt(webSessions.expiresAt, ctx.clock())));
  return row && { userId: row.userId, name: row.name, csrfToken: row.csrfToken };
}

/** Signs a browser out: the session ends now, whatever page or stream still holds its cookie. */
export async function endSession(ctx: Pick<ServiceContext, "database" | "clock">, { sessionId }: { sessionId: string }): Promise<void> {
  await ctx.database.db
    .update(webSessions)
    .set({ endedAt: ctx.clock() })
    .where(eq(webSessions.idHash, sha256(sessionId)));
}
