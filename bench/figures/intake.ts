import { randomInt } from "node:crypto";
import { alternate, throughput } from "../blocks.ts";
import { median, type FigureSource } from "../figure.ts";
import { captureTemplates, createFloorTables, floorGet, floorSubmit, type Templates } from "../floor.ts";
import { startIntakeFloor, type IntakeFloor } from "../process-floor.ts";
import { benchDatabaseUrl, mergeBody, startStack } from "../stack.ts";

const IN_FLIGHT = 8;
const CONTACTS = 1000;

/**
 * Plans per second through `POST /v1/plans` (validate, preview GET against the fake target, hash,
 * persist, enqueue) with 8 requests in flight, one per agent, against two floors, both run in each
 * floor block, 8 in flight:
 * - `intake_8_in_flight_vs_process_floor` (≥ 0.45, the guard rail): the product's own request body
 *   POSTed to a bare node:http process that parses it, reads the agent's key, GETs the target, runs
 *   the insert and answers with the stored plan (bench/process-floor.ts), as any service that takes
 *   plans over HTTP pays it. What is left between it and the product is the product's own work.
 * - `intake_8_in_flight` (≥ 0.30): the same key read, GET and three inserts in one statement from
 *   the bench process itself, no HTTP hop. The hop alone leaves the process floor at about two
 *   thirds of this one on 2 cores (its note prints the two floors' ratio), so 0.30 is the guard
 *   rail's 0.45 seen from this floor: higher would overrule the guard rail, lower would hide a loss.
 */
export const intake: FigureSource = {
  title: "intake, 8 in flight",
  async measure(pace) {
    const adminUrl = benchDatabaseUrl();
    if (!adminUrl) {
      const skipped = "set BENCH_DATABASE_URL or TEST_DATABASE_URL to a PostgreSQL it may create databases on";
      return [
        { name: "intake_8_in_flight", skipped },
        { name: "intake_8_in_flight_vs_process_floor", skipped },
      ];
    }
    // One agent per request in flight: 8 agents at once, not one agent 8 times (which the
    // product may order under its per-agent limits, as it should).
    const stack = await startStack({ adminUrl, contacts: CONTACTS, agents: IN_FLIGHT });
    let processFloor: IntakeFloor | undefined;
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
      const processFloors: number[] = [];
      const floor = async () => {
        processFloor ??= await startIntakeFloor(stack, adminUrl, templates!);
        const across = processFloor;
        processFloors.push(
          await throughput(IN_FLIGHT, pace.seconds, async () => {
            await across.submit(mergeBody(randomInt(1, CONTACTS + 1)));
          }),
        );
        return throughput(IN_FLIGHT, pace.seconds, async () => {
          await floorSubmit(stack.sql, templates!, () => floorGet(stack, randomInt(1, CONTACTS + 1)));
        });
      };
      const blocks = await alternate(pace.blocks, product, floor);
      const note = `${pace.seconds} s blocks; 8 agents, one request in flight each`;
      const processBlocks = processFloors.slice(1); // as alternate drops its warm-up block
      const hop = median(processBlocks.map((p, i) => p / blocks.floor[i]!));
      return [
        {
          name: "intake_8_in_flight",
          unit: "plans/s",
          ...blocks,
          goal: { atLeast: 0.3 },
          note: `${note}; floor: key read + GET + 3 inserts in one statement; the process floor ran at ${hop.toFixed(2)} of it`,
        },
        {
          name: "intake_8_in_flight_vs_process_floor",
          unit: "plans/s",
          product: blocks.product,
          floor: processBlocks,
          load: blocks.load,
          goal: { atLeast: 0.45 },
          note: `${note}; floor: POST of the same body to a bare node:http process (key read + GET + 3 inserts in one statement, answered with the stored plan)`,
        },
      ];
    } finally {
      await processFloor?.stop();
      await stack.stop();
    }
  },
};
