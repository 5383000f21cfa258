import { beforeAll, describe, expect, it } from "vitest";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import { createLoginLink } from "../../src/service/sign-in/login-links.ts";
import type { PlanView } from "../../src/service/lifecycle/plan-view.ts";
import { pendingCursorText } from "../../src/service/review/review-plan.ts";
import { submitPlan } from "../../src/service/intake/submit-plan.ts";
import { databaseKinds } from "../support/databases.ts";
import { freePort } from "../support/free-port.ts";
import { targetConfig, testConfig } from "../support/harness.ts";
import { useServer } from "../support/use-harness.ts";

/** The plan list over real HTTP: its pending section, the page after it, and a cursor it never gave. */
describe.each(databaseKinds)("the browser's plan list pages through pending plans, on $name", (kind) => {
  let origin: string;
  const s = useServer(kind, {
    config: async (url) => {
      const port = await freePort();
      origin = `http://127.0.0.1:${port}`;
      return { ...testConfig({ crm: targetConfig(url) }), port, publicUrl: origin };
    },
    run: { hostname: "127.0.0.1", sweepMs: 3_600_000 },
  });
  let cookie: string;
  let plan: PlanView;

  const get = async (path: string) => {
    const res = await fetch(`${origin}${path}`, { headers: { cookie } });
    return { status: res.status, body: await res.text() };
  };

  beforeAll(async () => {
    const agent = await addAgent(s.server.ctx, { name: "plan-list-agent" });
    plan = (
      await submitPlan(s.server.ctx, {
        agent,
        request: {
          title: "A plan waiting in the list",
          onBehalfOf: "U0REQUESTER",
          actions: [{ kind: "http.json", target: "crm", path: "/contacts/1", op: "merge", body: { email: "x@new.example" } }],
        },
      })
    ).plan;
    const { url } = await createLoginLink(s.server.ctx, { userId: "U0ALICE", via: "cli" });
    const res = await fetch(url, { method: "POST", redirect: "manual", headers: { origin } });
    expect(res.status).toBe(303);
    cookie = `cs_session=${/cs_session=([^;]+)/.exec(res.headers.get("set-cookie") ?? "")?.[1]}`;
  });

  it("lists the pending plan under 'Waiting for a decision', with no link to more", async () => {
    for (const path of ["/plans", "/plans?fragment=1", "/plans?status=pending"]) {
      const list = await get(path);
      expect(list.status).toBe(200);
      expect(list.body).toMatch(/Waiting for a decision \(1\)[\s\S]*A plan waiting in the list[\s\S]*Recent/);
      expect(list.body).not.toContain("More pending plans");
    }
  });

  it("the page after the last pending plan says nothing more is waiting and links back to the first; the live fragment keeps the page", async () => {
    const after = encodeURIComponent(pendingCursorText({ expiresAt: new Date(plan.expiresAt), id: plan.id }));
    const list = await get(`/plans?pending_after=${after}`);
    expect(list.status).toBe(200);
    expect(list.body).toContain("Nothing more is waiting.");
    expect(list.body).not.toContain("A plan waiting in the list");
    expect(list.body).toContain(`href="/plans">First pending plans</a>`);
    expect(list.body).toContain(`data-fragment="/plans?pending_after=${after}&amp;fragment=1"`);
  });

  it("a pending_after the list never gave is refused, naming the parameter and its form", async () => {
    const list = await get("/plans?pending_after=yesterday");
    expect(list.status).toBe(400);
    expect(list.body).toContain("pending_after must be");
  });
});
