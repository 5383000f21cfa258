import { beforeAll, describe, expect, it } from "vitest";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import { createLoginLink } from "../../src/service/sign-in/login-links.ts";
import type { PlanView } from "../../src/service/lifecycle/plan-view.ts";
import { submitPlan } from "../../src/service/intake/submit-plan.ts";
import { databaseKinds } from "../support/databases.ts";
import { freePort } from "../support/free-port.ts";
import { useServer } from "../support/use-harness.ts";
import { targetConfig, testConfig } from "../support/harness.ts";

/** browser.readers and admins through the browser door over real HTTP: what each person's pages show. */
describe.each(databaseKinds)("who may read, in the browser, on $name", (kind) => {
  const s = useServer(kind, {
    seed: { "/contacts/1": { id: 1, email: "secret-person@old.example" } },
    config: async (url) => {
      const port = await freePort();
      origin = `http://127.0.0.1:${port}`;
      const base = testConfig({ crm: targetConfig(url), hr: targetConfig(url, { policy: { approvers: ["U0DAVE"] } }) });
      return { ...base, port, publicUrl: origin, browser: { ...base.browser, readers: ["U0READER"] }, admins: ["U0ADMIN"] };
    },
    run: { hostname: "127.0.0.1", sweepMs: 3_600_000 },
  });
  let origin: string;
  let crm: PlanView;
  let hr: PlanView;

  /** A session cookie for `userId`, from a one-time link spent the way the confirm page spends it. */
  const signIn = async (userId: string): Promise<string> => {
    const { url } = await createLoginLink(s.server.ctx, { userId, via: "cli" });
    const res = await fetch(url, { method: "POST", redirect: "manual", headers: { origin } });
    expect(res.status).toBe(303);
    const cookie = /cs_session=([^;]+)/.exec(res.headers.get("set-cookie") ?? "")?.[1];
    expect(cookie).toBeDefined();
    return `cs_session=${cookie}`;
  };
  const get = async (path: string, cookie: string) => {
    const res = await fetch(`${origin}${path}`, { headers: { cookie } });
    return { status: res.status, body: await res.text() };
  };

  beforeAll(async () => {
    const agent = await addAgent(s.server.ctx, { name: "read-rights-agent" });
    const change = (target: string, title: string) => ({
      title,
      onBehalfOf: "U0REQUESTER",
      actions: [{ kind: "http.json", target, path: "/contacts/1", op: "merge", body: { email: "new-person@new.example" } }],
    });
    crm = (await submitPlan(s.server.ctx, { agent, request: change("crm", "Crm title visible only to readers") })).plan;
    hr = (await submitPlan(s.server.ctx, { agent, request: change("hr", "Hr title visible only to readers") })).plan;
  });

  it("someone signed in but not named anywhere gets no plan: an empty list, 403 on each plan page and live stream, nothing of the plan in the answer", async () => {
    const cookie = await signIn("U0MALLORY");
    const list = await get("/plans", cookie);
    expect(list.status).toBe(200);
    expect(list.body).not.toContain("visible only to readers");
    expect(list.body).not.toContain(crm.id);
    for (const plan of [crm, hr]) {
      for (const path of [`/plans/${plan.id}`, `/plans/${plan.id}?fragment=1`, `/plans/${plan.id}/live`]) {
        const page = await get(path, cookie);
        expect(page.status, path).toBe(403);
        expect(page.body, path).not.toContain("visible only to readers");
        expect(page.body, path).not.toContain("person@");
      }
    }
  });

  it.each<[who: string, userId: string, sees: ("crm" | "hr")[]]>([
    ["a listed reader reads every plan", "U0READER", ["crm", "hr"]],
    ["an admin reads every plan", "U0ADMIN", ["crm", "hr"]],
    ["a crm approver reads crm plans only", "U0ALICE", ["crm"]],
    ["an hr approver reads hr plans only", "U0DAVE", ["hr"]],
  ])("%s", async (_who, userId, sees) => {
    const cookie = await signIn(userId);
    const list = await get("/plans", cookie);
    for (const [name, plan] of [
      ["crm", crm],
      ["hr", hr],
    ] as const) {
      const page = await get(`/plans/${plan.id}`, cookie);
      if (sees.includes(name)) {
        expect(list.body).toContain(plan.plan.title);
        expect(page.status).toBe(200);
        expect(page.body).toContain(plan.plan.title);
      } else {
        expect(list.body).not.toContain(plan.plan.title);
        expect(page.status).toBe(403);
      }
    }
  });

  it("only a person who may decide gets buttons; a reader who may not is told why", async () => {
    const alice = await get(`/plans/${crm.id}`, await signIn("U0ALICE"));
    expect(alice.body).toContain(`action="/plans/${crm.id}/approve"`);
    const reader = await get(`/plans/${crm.id}`, await signIn("U0READER"));
    expect(reader.body).not.toContain(`action="/plans/${crm.id}/approve"`);
    expect(reader.body).toContain("You are not an approver for this plan.");
  });
});
