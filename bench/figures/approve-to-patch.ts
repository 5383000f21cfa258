import { alternate } from "../blocks.ts";
import { median, type FigureSource } from "../figure.ts";
import { captureTemplates, createFloorTables, floorApply, floorInsertPlan, type Templates } from "../floor.ts";
import { startProcessFloor, type ProcessFloor } from "../process-floor.ts";
import { benchDatabaseUrl, clickApprove, epochNow, planStatus, startStack, undelivered, until } from "../stack.ts";

const CONTACTS = 1000;

/**
 * Figure 2 of issue 13: from an Approve click (a signed Slack `block_actions` POST to the server's
 * /slack/events, as Slack sends it) to the fake target receiving the executor's PATCH, one plan at
 * a time, with a separate `countersign executor` process claiming. Each click comes once the plan's
 * review message is posted and the outbox is quiet (a person clicks on a message they saw); the
 * next plan waits until this one is applied (and its Slack updates are delivered before its click).
 * Two floors, measured in the same floor block, each against the same product blocks:
 * - `approve_to_patch_p50` (one process): GET (the approval's re-check of the target), UPDATE
 *   (the decision), GET (the executor's re-read), PATCH with If-Match, timed to the PATCH's arrival
 *   like the product; then the UPDATE recording the outcome, untimed.
 * - `approve_to_patch_p50_vs_process_floor`: the same work across the product's process boundaries
 *   and no more (bench/process-floor.ts): an HTTP POST to a bare server that GETs, then UPDATEs
 *   (approved and handed over, as the product's hand-off) and NOTIFYs in one statement; a bare
 *   LISTENing process that GETs and PATCHes.
 */
export const approveToPatch: FigureSource = {
  title: "approve click → target PATCH",
  async measure(pace) {
    const adminUrl = benchDatabaseUrl();
    if (!adminUrl) {
      const skipped = "set BENCH_DATABASE_URL or TEST_DATABASE_URL to a PostgreSQL it may create databases on";
      return [
        { name: "approve_to_patch_p50", skipped },
        { name: "approve_to_patch_p50_vs_process_floor", skipped },
      ];
    }
    const stack = await startStack({ adminUrl, contacts: CONTACTS });
    let processFloor: ProcessFloor | undefined;
    try {
      await createFloorTables(stack.sql);
      processFloor = await startProcessFloor(stack, adminUrl);
      const processFloors: number[] = [];
      let contact = 0;
      let templates: Templates | undefined;
      const quiet = () => until("the outbox to be delivered", async () => (await undelivered(stack.sql)) === 0, 120_000, 20);
      const product = async () => {
        const times: number[] = [];
        for (let i = 0; i < pace.rounds; i++) {
          const path = `/contacts/${(contact++ % CONTACTS) + 1}`;
          const plan = await stack.submit(Number(path.split("/")[2]));
          await quiet();
          const arrived = stack.nextWrite(path);
          const started = epochNow();
          const status = await clickApprove(stack, plan);
          if (status !== 200) throw new Error(`the Approve click was answered ${status}`);
          times.push((await arrived) - started);
          await until(`plan ${plan.id} to be applied`, async () => (await planStatus(stack, plan.id)) === "applied", 120_000, 20);
        }
        await quiet(); // the last plan's Slack updates, before the floor's block
        templates ??= await captureTemplates(stack.sql);
        return median(times);
      };
      // The floor block runs both floors, one plan of each in turn; the process floor's median is
      // kept for the second figure (the warm-up block's too, dropped below as alternate drops it).
      const floor = async () => {
        const times: number[] = [];
        const across: number[] = [];
        for (let i = 0; i < pace.rounds; i++) {
          const c = (contact++ % CONTACTS) + 1;
          const id = await floorInsertPlan(stack.sql, templates!);
          times.push(await floorApply(stack, id, c));
          const p = (contact++ % CONTACTS) + 1;
          across.push(await processFloor!.apply(await floorInsertPlan(stack.sql, templates!), p));
        }
        processFloors.push(median(across));
        return median(times);
      };
      const blocks = await alternate(pace.blocks, product, floor);
      const clicks = `${pace.rounds} sequential clicks per block (signed Slack block_actions POST)`;
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
          goal: { atMost: 2 },
          note: `${clicks}; floor: POST to a bare node:http process (GET, then UPDATE + NOTIFY in one statement), a bare LISTENing process (GET, PATCH If-Match; + UPDATE untimed); target calls on node:http`,
        },
      ];
    } finally {
      await processFloor?.stop();
      await stack.stop();
    }
  },
};
