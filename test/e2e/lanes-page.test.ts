import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import { createLoginLink } from "../../src/service/sign-in/login-links.ts";
import { DeliveryError } from "../../src/service/delivery/sink-contract.ts";
import { submitPlan } from "../../src/service/intake/submit-plan.ts";
import { pglite } from "../support/databases.ts";
import { freePort } from "../support/free-port.ts";
import { targetConfig, testConfig } from "../support/harness.ts";
import { useServer } from "../support/use-harness.ts";
import { waitFor } from "../support/wait-for.ts";

/**
 * The delivery lanes page over real HTTP, with the server's own outbox worker: a sink that
 * refuses for good leaves a dead delivery; readers see it, only an admin's retry (with the
 * session's CSRF token) puts it back, and the worker then delivers it.
 */
describe("the delivery lanes page", () => {
  let refusing = true;
  const delivered: string[] = [];
  const s = useServer(pglite, {
    config: async (url) => {
      const port = await freePort();
      origin = `http://127.0.0.1:${port}`;
      const base = testConfig({ crm: targetConfig(url) });
      return { ...base, port, publicUrl: origin, browser: { ...base.browser, readers: ["U0READER"] }, admins: ["U0ADMIN"] };
    },
    run: {
      hostname: "127.0.0.1",
      sweepMs: 3_600_000,
      deliverMs: 50,
      outboxHandlers: {
        notify: async (event) => {
          if (refusing) throw new DeliveryError("notify answered 410 Gone <script>", { permanent: true });
          delivered.push(event.planId);
        },
      },
    },
  });
  let origin: string;
  let planId: string;

  /** A session cookie and its CSRF token for `userId`, from a one-time link. */
  const signIn = async (userId: string): Promise<{ cookie: string; csrf: string }> => {
    const { url } = await createLoginLink(s.server.ctx, { userId, via: "cli" });
    const res = await fetch(url, { method: "POST", redirect: "manual", headers: { origin } });
    expect(res.status).toBe(303);
    const cookie = `cs_session=${/cs_session=([^;]+)/.exec(res.headers.get("set-cookie") ?? "")?.[1]}`;
    const page = await get("/plans", cookie);
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1];
    expect(csrf).toBeDefined();
    return { cookie, csrf: csrf! };
  };
  const get = async (path: string, cookie?: string) => {
    const res = await fetch(`${origin}${path}`, { headers: cookie ? { cookie } : {}, redirect: "manual" });
    return { status: res.status, body: await res.text() };
  };
  const post = async (path: string, cookie: string, form: Record<string, string>, from = origin) => {
    const res = await fetch(`${origin}${path}`, {
      method: "POST",
      redirect: "manual",
      headers: { cookie, origin: from, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(form).toString(),
    });
    return { status: res.status, location: res.headers.get("location"), body: await res.text() };
  };
  const deadRows = async () => (await s.database.rows<{ id: number | string }>(sql`SELECT id FROM outbox WHERE dead_at IS NOT NULL`)).map((r) => Number(r.id));

  beforeAll(async () => {
    const agent = await addAgent(s.server.ctx, { name: "lanes-page-agent" });
    planId = (
      await submitPlan(s.server.ctx, {
        agent,
        request: {
          title: "Lane page plan",
          actions: [{ kind: "http.json", target: "crm", path: "/contacts/1", op: "merge", body: { email: "x@new.example" } }],
        },
      })
    ).plan.id;
    await waitFor("the refused delivery to be dead-lettered", async () => (await deadRows()).length === 1);
  });

  it("needs a signed-in person", async () => {
    const page = await get("/lanes");
    expect(page.status).toBe(401);
    expect(page.body).not.toContain("notify");
  });

  it("is refused, with the reason, to someone browser.readers leaves out, whose nav does not link it", async () => {
    const { cookie } = await signIn("U0MALLORY");
    const page = await get("/lanes", cookie);
    expect(page.status).toBe(403);
    expect(page.body).toContain("only admins and the people in browser.readers may");
    expect(page.body).not.toContain("Lane page plan");
    expect((await get("/plans", cookie)).body).not.toContain('href="/lanes"');
  });

  it("shows a reader each lane's numbers and the dead delivery with its plan, error escaped, and no retry button", async () => {
    const { cookie } = await signIn("U0READER");
    expect((await get("/plans", cookie)).body).toContain('href="/lanes"');
    const page = await get("/lanes", cookie);
    expect(page.status).toBe(200);
    expect(page.body).toMatch(/<tr data-lane="notify">.*?class="backlog">0<.*?class="dead">1</s);
    expect(page.body).toContain(`<a href="/plans/${planId}">Lane page plan</a>`);
    expect(page.body).toContain("notify answered 410 Gone &lt;script&gt;");
    expect(page.body).toContain("plan.submitted");
    expect(page.body).not.toContain("/retry");
    expect(page.body).toContain("Only admins");
  });

  it("refuses a reader's retry with a 403 naming why, and the delivery stays dead", async () => {
    const { cookie, csrf } = await signIn("U0READER");
    const [id] = await deadRows();
    const res = await post(`/lanes/dead/${id}/retry`, cookie, { _csrf: csrf });
    expect(res.status).toBe(403);
    expect(res.body).toContain("only admins may retry a dead delivery");
    expect(res.body).toContain("U0READER is not one of them");
    expect(await deadRows()).toEqual([id]);
  });

  it("refuses an admin's retry without the session's CSRF token or from another origin", async () => {
    const { cookie, csrf } = await signIn("U0ADMIN");
    const [id] = await deadRows();
    expect((await post(`/lanes/dead/${id}/retry`, cookie, { _csrf: "stale" })).status).toBe(403);
    expect((await post(`/lanes/dead/${id}/retry`, cookie, { _csrf: csrf }, "https://evil.example")).status).toBe(403);
    expect(await deadRows()).toEqual([id]);
  });

  it("lets an admin retry: back in its lane, audited, delivered by the worker, gone from the page", async () => {
    const { cookie, csrf } = await signIn("U0ADMIN");
    const [id] = await deadRows();
    const page = await get("/lanes", cookie);
    expect(page.body).toContain(`action="/lanes/dead/${id}/retry"`);
    refusing = false;
    const res = await post(`/lanes/dead/${id}/retry`, cookie, { _csrf: csrf });
    expect(res).toMatchObject({ status: 303, location: "/lanes" });
    await waitFor("the retried delivery to arrive", () => delivered.includes(planId));
    const [audit] = await s.database.rows<{ actor: string; data: string }>(sql`SELECT actor, data FROM audit_events WHERE type = 'outbox.retried'`);
    expect(JSON.parse(audit!.actor)).toMatchObject({ userId: "U0ADMIN", via: "web" });
    expect(JSON.parse(audit!.data)).toMatchObject({ outboxId: id, lane: "notify", planId });
    const after = await get("/lanes", cookie);
    expect(after.body).toMatch(/<tr data-lane="notify">.*?class="backlog">0<.*?class="dead">0</s);
    expect(after.body).toContain("Dead deliveries (0)");
    // Retrying again finds nothing dead.
    expect((await post(`/lanes/dead/${id}/retry`, cookie, { _csrf: csrf })).status).toBe(404);
  });
});
