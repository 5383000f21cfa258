import { afterEach, describe, expect, it } from "vitest";
import type { Claim } from "../../../src/contract/executor-api.ts";
import type { ServiceContext } from "../../../src/service/context.ts";
import { decide } from "../../../src/service/decide/decide.ts";
import { claimApprovedWaiting } from "../../../src/service/execution/claim-approved.ts";
import { reportOutcome } from "../../../src/service/execution/report-outcome.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { waitForPlan } from "../../../src/service/intake/wait-for-plan.ts";
import { announcementPayload, PLAN_CHANNEL } from "../../../src/service/records/plan-signals.ts";
import type { Db } from "../../../src/store/db.ts";
import { databaseKinds } from "../../support/databases.ts";
import { mergeRequest } from "../../support/harness.ts";
import { useHarness } from "../../support/use-harness.ts";

/** Far longer than the test runs: a wait that ends did so because it was woken. */
const LONG_MS = 600_000;
/** Long enough for a woken waiter to read again and answer, on a loaded machine. */
const PROMPTLY_MS = 3_000;

/**
 * A plan changes, and its announcement is heard, after a waiter has read it and before the
 * waiter would wait: the waiter still wakes. The change is made from inside the waiter's read
 * (its context's database answers only once the change is heard), and the waiter's timers are
 * stretched to LONG_MS, so only the announcement can end its wait.
 */
describe.each(databaseKinds)("a change heard between a waiter's read and its wait, on $name", (kind) => {
  const h = useHarness(kind);
  let stop = new AbortController();
  afterEach(() => {
    stop.abort();
    stop = new AbortController();
  });

  /**
   * Runs `change` and resolves once this process has heard the announcement `wanted` matches,
   * and the signals have handled it. A submit's announcement comes after it, coalesced
   * (store-new-plan.ts): heard in the gap, it would stand in for the change under test.
   */
  async function heardAfter<T>(change: () => Promise<T>, wanted: (payload: string) => boolean): Promise<T> {
    let heard!: () => void;
    const announced = new Promise<void>((r) => (heard = r));
    const unlisten = await h.database.listen(PLAN_CHANNEL, (payload) => {
      if (wanted(payload)) heard();
    });
    try {
      const result = await change();
      await announced;
      await new Promise((r) => setImmediate(r));
      return result;
    } finally {
      await unlisten();
    }
  }

  const submitted = (title: string) =>
    heardAfter(
      () => submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title }) }),
      (p) => p.endsWith(" pending"),
    );

  /** The waiter's context: `change` runs inside its first read, and its waits never time out. */
  function waiterContext(overrides: { db?: (db: Db) => Db }): ServiceContext {
    const { database, signals } = h.ctx;
    return {
      ...h.ctx,
      database: new Proxy(database, {
        get: (target, prop) => {
          if (prop === "db" && overrides.db) return overrides.db(target.db);
          const value: unknown = Reflect.get(target, prop, target);
          return typeof value === "function" ? value.bind(target) : value;
        },
      }),
      signals: new Proxy(signals, {
        get: (target, prop) => {
          if (prop === "wait") return (planId: string, _ms: number, signal?: AbortSignal) => target.wait(planId, LONG_MS, signal);
          if (prop === "waitClaimable") return (_ms: number, signal?: AbortSignal) => target.waitClaimable(LONG_MS, signal);
          const value: unknown = Reflect.get(target, prop, target);
          return typeof value === "function" ? value.bind(target) : value;
        },
      }),
    };
  }

  /** Resolves with what `waiting` gives, or "still waiting" if it has not answered within PROMPTLY_MS. */
  function promptly<T>(waiting: Promise<T>): Promise<T | "still waiting"> {
    return Promise.race([waiting, new Promise<"still waiting">((r) => setTimeout(() => r("still waiting"), PROMPTLY_MS).unref())]);
  }

  it("an agent's wait returns the plan's final status", async () => {
    const { plan } = await submitted("rejected in the gap");
    let changed = false;
    const reject = () =>
      heardAfter(
        () => decide(h.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "reject", reason: "in the gap" }),
        (p) => p === announcementPayload(plan.id, "rejected"),
      );
    // The first select through the waiter's db (the plan's row) answers only once the rejection is heard.
    const db = (real: Db): Db =>
      new Proxy(real, {
        get: (target, prop) => {
          if (prop !== "select" || changed) return Reflect.get(target, prop, target);
          return (...args: Parameters<Db["select"]>) => {
            const builder = target.select(...args);
            const from = builder.from.bind(builder);
            return Object.assign(builder, {
              from: (...table: Parameters<typeof from>) => {
                const query = from(...table);
                const then = query.then.bind(query);
                return Object.assign(query, {
                  then: (ok: (rows: unknown) => unknown, fail: (err: unknown) => unknown) =>
                    then(async (rows) => {
                      if (!changed) {
                        changed = true;
                        await reject();
                      }
                      return rows;
                    }).then(ok, fail),
                });
              },
            });
          };
        },
      });

    const view = await promptly(waitForPlan(waiterContext({ db }), { agent: h.agent, planId: plan.id, timeoutMs: LONG_MS, signal: stop.signal }));
    expect(changed).toBe(true);
    expect(view === "still waiting" ? view : view.status).toBe("rejected");
  });

  it("an executor's wait claims the plan approved", async () => {
    const { plan } = await submitted("approved in the gap");
    let changed = false;
    // The first claim transaction (finding nothing) answers only once the approval is heard.
    const db = (real: Db) =>
      new Proxy(real, {
        get: (target, prop) => {
          if (prop !== "transaction") return Reflect.get(target, prop, target);
          const transaction: Db["transaction"] = async (body, config) => {
            const result = await target.transaction(body, config);
            if (!changed) {
              changed = true;
              await heardAfter(
                () => decide(h.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" }),
                (p) => p === announcementPayload(plan.id, "approved"),
              );
            }
            return result;
          };
          return transaction;
        },
      });

    const claim: Claim | undefined | "still waiting" = await promptly(claimApprovedWaiting(waiterContext({ db }), { waitMs: LONG_MS, signal: stop.signal }));
    expect(changed).toBe(true);
    expect(claim === "still waiting" ? claim : claim?.plan.id).toBe(plan.id);
    if (claim !== "still waiting" && claim) {
      await reportOutcome(h.ctx, {
        claimToken: claim.claimToken,
        outcome: { status: "applied", actions: [{ index: 0, target: "crm", path: "/contacts/1", status: "applied" }] },
      });
    }
  });
});
