import { alternate } from "../blocks.ts";
import { median, type FigureSource } from "../figure.ts";
import { captureTemplates, createFloorTables, floorApply, floorInsertPlan, type Templates } from "../floor.ts";
import { benchDatabaseUrl, clickApprove, epochNow, planStatus, startStack, undelivered, until } from "../stack.ts";

const CONTACTS = 1000;

/**
 * Figure 2 of issue 13: from an Approve click (a signed Slack `block_actions` POST to the server's
 * /slack/events, as Slack sends it) to the fake target receiving the executor's PATCH, one plan at
 * a time, with a separate `countersign executor` process claiming. Each click comes once the plan's
 * review message is posted and the outbox is quiet (a person clicks on a message they saw); the
 * next plan waits until this one is applied (and its Slack updates are delivered before its click).
 * Floor: GET (the approval's re-check of the target), UPDATE (the decision), GET (the executor's
 * re-read), PATCH with If-Match, timed to the PATCH's arrival like the product; then the UPDATE
 * recording the outcome, untimed.
 */
export const approveToPatch: FigureSource = {
  title: "approve click → target PATCH",
  async measure(pace) {
    const adminUrl = benchDatabaseUrl();
    if (!adminUrl) return [{ name: "approve_to_patch_p50", skipped: "set BENCH_DATABASE_URL or TEST_DATABASE_URL to a PostgreSQL it may create databases on" }];
    const stack = await startStack({ adminUrl, contacts: CONTACTS });
    try {
      await createFloorTables(stack.sql);
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
      const floor = async () => {
        const times: number[] = [];
        for (let i = 0; i < pace.rounds; i++) {
          const c = (contact++ % CONTACTS) + 1;
          const id = await floorInsertPlan(stack.sql, templates!);
          times.push(await floorApply(stack, id, c));
        }
        return median(times);
      };
      const blocks = await alternate(pace.blocks, product, floor);
      return [{ name: "approve_to_patch_p50", unit: "ms", ...blocks, goal: { atMost: 3 }, note: `${pace.rounds} sequential clicks per block (signed Slack block_actions POST); floor: GET, UPDATE, GET, PATCH If-Match (+ UPDATE untimed)` }];
    } finally {
      await stack.stop();
    }
  },
};
