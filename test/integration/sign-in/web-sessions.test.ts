import { describe, expect, it } from "vitest";
import { consumeLoginLink, createLoginLink, endSession, LOGIN_LINK_TTL_MS, SESSION_TTL_MS, sessionOf } from "../../../src/service/sign-in/login-links.ts";
import { databaseKinds } from "../../support/databases.ts";
import { refusal } from "../../support/refusal.ts";
import { useHarness } from "../../support/use-harness.ts";

/** The token a login link carries, as the /login/:token route reads it. */
const tokenOf = (url: string) => url.slice(url.lastIndexOf("/") + 1);

/**
 * The browser-session verbs at the service door, which otherwise only the Chromium suites reach:
 * a link signs in once, a session lives until it is ended or times out.
 */
describe.each(databaseKinds)("web sessions on $name", (kind) => {
  const h = useHarness(kind);

  it("a login link opens a session once; the session is live until ended", async () => {
    const { url } = await createLoginLink(h.ctx, { userId: "U0ALICE", name: "Alice", via: "cli" });
    const { sessionId, session } = await consumeLoginLink(h.ctx, { token: tokenOf(url) });
    expect(session).toMatchObject({ userId: "U0ALICE", name: "Alice" });
    expect(await sessionOf(h.ctx, { sessionId })).toEqual(session);
    expect((await refusal(consumeLoginLink(h.ctx, { token: tokenOf(url) }))).code).toBe("unauthorized");
    await endSession(h.ctx, { sessionId });
    expect(await sessionOf(h.ctx, { sessionId })).toBeUndefined();
  });

  it("no cookie, an unknown id, an expired link or an expired session names no session", async () => {
    expect(await sessionOf(h.ctx, { sessionId: undefined })).toBeUndefined();
    expect(await sessionOf(h.ctx, { sessionId: "no-such-session" })).toBeUndefined();
    const late = await createLoginLink(h.ctx, { userId: "U0BOB", via: "cli" });
    h.clock.advance(LOGIN_LINK_TTL_MS / 1000 + 1);
    expect((await refusal(consumeLoginLink(h.ctx, { token: tokenOf(late.url) }))).code).toBe("unauthorized");
    const fresh = await createLoginLink(h.ctx, { userId: "U0BOB", via: "cli" });
    const { sessionId } = await consumeLoginLink(h.ctx, { token: tokenOf(fresh.url) });
    expect((await sessionOf(h.ctx, { sessionId }))?.userId).toBe("U0BOB");
    h.clock.advance(SESSION_TTL_MS / 1000 + 1);
    expect(await sessionOf(h.ctx, { sessionId })).toBeUndefined();
  });
});
