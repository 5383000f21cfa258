import { randomInt } from "node:crypto";
import { alternate, throughput } from "../blocks.ts";
import type { FigureSource } from "../figure.ts";
import { captureTemplates, createFloorTables, floorGet, floorInsertPlan, type Templates } from "../floor.ts";
import { benchDatabaseUrl, startStack } from "../stack.ts";

const IN_FLIGHT = 8;
const CONTACTS = 1000;

/**
 * Figure 1 of issue 13: plans per second through `POST /v1/plans` (validate, preview GET against
 * the fake target, hash, persist, enqueue) with 8 requests in flight, one per agent, against the
 * floor: one GET of the target and one transaction of three inserts, also 8 in flight.
 */
export const intake: FigureSource = {
  title: "intake, 8 in flight",
  async measure(pace) {
    const adminUrl = benchDatabaseUrl();
    if (!adminUrl) return [{ name: "intake_8_in_flight", skipped: "set BENCH_DATABASE_URL or TEST_DATABASE_URL to a PostgreSQL it may create databases on" }];
    // One agent per request in flight: 8 agents at once, not one agent 8 times (which the
    // product may order under its per-agent limits, as it should).
    const stack = await startStack({ adminUrl, contacts: CONTACTS, agents: IN_FLIGHT });
    try {
      await createFloorTables(stack.sql);
      let templates: Templates | undefined;
      const product = async () => {
        const rate = await throughput(IN_FLIGHT, pace.seconds, async (worker) => {
          await stack.submit(randomInt(1, CONTACTS + 1), { agent: worker });
        });
        templates ??= await captureTemplates(stack.sql);
        return rate;
      };
      const floor = () => throughput(IN_FLIGHT, pace.seconds, async () => {
        await floorGet(stack, randomInt(1, CONTACTS + 1));
        await floorInsertPlan(stack.sql, templates!);
      });
      const blocks = await alternate(pace.blocks, product, floor);
      return [{ name: "intake_8_in_flight", unit: "plans/s", ...blocks, goal: { atLeast: 0.6 }, note: `${pace.seconds} s blocks; 8 agents, one request in flight each; floor: GET + one transaction of 3 inserts` }];
    } finally {
      await stack.stop();
    }
  },
};
