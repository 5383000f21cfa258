import os from "node:os";
import { Countersign } from "../../src/client/index.ts";
import { alternate } from "../blocks.ts";
import { median, percentile, type Figure, type FigureSource } from "../figure.ts";
import { captureTemplates, createFloorTables, floorApply, floorInsertPlan, type Templates } from "../floor.ts";
import { startProcessFloor, type ProcessFloor } from "../process-floor.ts";
import { benchDatabaseUrl, clickApprove, epochNow, planStatus, startStack, undelivered, until, type Stack } from "../stack.ts";

const CONTACTS = 1000;
/** Approvals behind `approve_to_applied_seen_by_agent`: enough that its p99 is not simply the slowest one. */
const SEEN_BY_AGENT = 100;
const SEEN_BY_AGENT_QUICK = 10;

/**
 * Approve clicks (a signed Slack `block_actions` POST to the server's /slack/events, as Slack sends
 * it) on one stack with a separate `countersign executor` process claiming, one plan at a time.
 * Each click comes once the plan's review message is posted and the outbox is quiet (a person
 * clicks on a message they saw); the next plan waits until this one is applied and its Slack
 * updates are delivered. Three figures:
 * - `approve_to_patch_p50` (≤ 3× its floor): from the click to the fake target receiving the
 *   executor's PATCH, against one process doing GET (the approval's re-check of the target),
 *   UPDATE (the decision), GET (the executor's re-read), PATCH with If-Match, timed to the PATCH's
 *   arrival like the product; then the UPDATE recording the outcome, untimed.
 * - `approve_to_patch_p50_vs_process_floor` (≤ 3× its floor): the same product blocks against the
 *   same work across the product's process boundaries and no more (bench/process-floor.ts): an
 *   HTTP POST to a bare server that GETs, then UPDATEs (approved and claimed at once, the least
 *   the work needs) and NOTIFYs in one statement; a bare LISTENing process that GETs and PATCHes. Both
 *   floors run in each floor block, one plan of each in turn.
 * - `approve_to_applied_seen_by_agent` (p99 ≤ 3× its own p50): after the blocks, 100 more clicks
 *   (10 with --quick), each timed until the agent's client, waiting on the plan since it submitted
 *   it (`waitForOutcome`, the `GET /v1/plans/:id/wait` long-poll), hears `applied`. It guards the
 *   tail (a wake-up the long-poll misses waits for its 1 s re-read), so its yardstick is its own
 *   median rather than a floor.
 */
export const approveToPatch: FigureSource = {
  title: "approve click → target PATCH, and → applied as the agent sees it",
  async measure(pace) {
    const adminUrl = benchDatabaseUrl();
    if (!adminUrl) {
      const skipped = "set BENCH_DATABASE_URL or TEST_DATABASE_URL to a PostgreSQL it may create databases on";
      return [
        { name: "approve_to_patch_p50", skipped },
        { name: "approve_to_patch_p50_vs_process_floor", skipped },
        { name: "approve_to_applied_seen_by_agent", skipped },
      ];
    }
    const stack = await startStack({ adminUrl, contacts: CONTACTS });
    let processFloor: ProcessFloor | undefined;
    try {
      await createFloorTables(stack.sql);
      processFloor = await startProcessFloor(stack, adminUrl);
      const processFloors: number[] = [];
      let contact = 0;
      const nextContact = () => (contact++ % CONTACTS) + 1;
      let templates: Templates | undefined;
      const product = async () => {
        const times: number[] = [];
        for (let i = 0; i < pace.rounds; i++) {
          const c = nextContact();
          const plan = await stack.submit(c);
          await quiet(stack);
          const arrived = stack.nextWrite(`/contacts/${c}`);
          const started = epochNow();
          const status = await clickApprove(stack, plan);
          if (status !== 200) throw new Error(`the Approve click was answered ${status}`);
          times.push((await arrived) - started);
          await until(`plan ${plan.id} to be applied`, async () => (await planStatus(stack, plan.id)) === "applied", 120_000, 20);
        }
        await quiet(stack); // the last plan's Slack updates, before the floor's block
        templates ??= await captureTemplates(stack.sql);
        return median(times);
      };
      // The floor block runs both floors, one plan of each in turn; the process floor's median is
      // kept for the second figure (the warm-up block's too, dropped below as alternate drops it).
      const floor = async () => {
        const times: number[] = [];
        const across: number[] = [];
        for (let i = 0; i < pace.rounds; i++) {
          const id = await floorInsertPlan(stack.sql, templates!);
          times.push(await floorApply(stack, id, nextContact()));
          across.push(await processFloor!.apply(await floorInsertPlan(stack.sql, templates!), nextContact()));
        }
        processFloors.push(median(across));
        return median(times);
      };
      const blocks = await alternate(pace.blocks, product, floor);
      const clicks = `${pace.rounds} sequential clicks per block (signed Slack block_actions POST)`;
      const seen = await seenByAgent(stack, pace.quick, nextContact);
      return [
        {
          name: "approve_to_patch_p50",
          unit: "ms",
          ...blocks,
          goal: { atMost: 3 },
          note: `${clicks}; floor: GET, UPDATE, GET, PATCH If-Match in one process (+ UPDATE untimed), node:http`,
        },
        {
          name: "approve_to_patch_p50_vs_process_floor",
          unit: "ms",
          product: blocks.product,
          floor: processFloors.slice(1),
          load: blocks.load,
          goal: { atMost: 3 },
          note: `${clicks}; floor: POST to a bare node:http process (GET, then UPDATE + NOTIFY in one statement), a bare LISTENing process (GET, PATCH If-Match; + UPDATE untimed); target calls on node:http`,
        },
        seen,
      ];
    } finally {
      await processFloor?.stop();
      await stack.stop();
    }
  },
};

/** Until the outbox is delivered: the plan's review post, or the last plan's Slack updates. */
function quiet(stack: Stack): Promise<void> {
  return until("the outbox to be delivered", async () => (await undelivered(stack.sql)) === 0, 120_000, 20);
}

/**
 * Plans one at a time, each waited on by the agent's own client from its submission; the time from
 * each Approve click to the client's answer, as p99 ÷ p50.
 */
async function seenByAgent(stack: Stack, quick: boolean, nextContact: () => number): Promise<Figure> {
  const approvals = quick ? SEEN_BY_AGENT_QUICK : SEEN_BY_AGENT;
  const agent = new Countersign({ url: stack.url, key: stack.agentKey });
  const times: number[] = [];
  const load = [os.loadavg()[0]!];
  for (let i = 0; i < approvals; i++) {
    const plan = await stack.submit(nextContact());
    const heard = agent.waitForOutcome(plan.id, { timeoutMs: 120_000 }).then((outcome) => ({ status: outcome.status, at: performance.now() }));
    // Awaited after the click; this keeps a failed wait from going unhandled should the click throw first.
    heard.catch(() => {});
    await quiet(stack);
    const started = performance.now();
    const status = await clickApprove(stack, plan);
    if (status !== 200) throw new Error(`the Approve click was answered ${status}`);
    const outcome = await heard;
    if (outcome.status !== "applied") throw new Error(`plan ${plan.id} ended ${outcome.status}, not applied`);
    times.push(outcome.at - started);
  }
  await quiet(stack);
  load.push(os.loadavg()[0]!);
  const p50 = percentile(times, 50);
  const p99 = percentile(times, 99);
  return {
    name: "approve_to_applied_seen_by_agent",
    value: p99 / p50,
    unit: "× p50",
    goal: { atMost: 3 },
    note: `p99 ${p99.toFixed(1)} ms ÷ p50 ${p50.toFixed(1)} ms over ${approvals} sequential clicks (signed Slack block_actions POST), each until the agent's waitForOutcome (GET /v1/plans/:id/wait, waiting since the submission) returns applied; max ${Math.max(...times).toFixed(1)} ms; load ${load.map((l) => l.toFixed(1)).join("–")}${quick ? `; --quick: ${approvals} approvals, not ${SEEN_BY_AGENT}, so its p99 is the slowest one` : ""}`,
  };
}
