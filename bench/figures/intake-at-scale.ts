import { randomInt } from "node:crypto";
import { alternate } from "../blocks.ts";
import { median, type FigureSource } from "../figure.ts";
import { seededDatabase, sizeLabel } from "../seed.ts";
import { benchDatabaseUrl, startStack, type Stack } from "../stack.ts";

const SMALL = 10_000;
const CONTACTS = 1000;

/**
 * `intake_p50_1m_vs_10k` (≤ 1.2): the p50 of one `POST /v1/plans` at a time on a database holding
 * a large stored history (1 M plans) against the same on 10 k, both servers (each with its executor
 * and Slack emulator) running side by side, blocks alternating. With --quick the large side is
 * 100 k and the line says so in its name (`intake_p50_100k_vs_10k`). The histories are seeded once
 * and kept (seed.ts).
 */
export const intakeAtScale: FigureSource = {
  title: "intake p50 at scale",
  async measure(pace) {
    const adminUrl = benchDatabaseUrl();
    const name = `intake_p50_${sizeLabel(pace.largePlans)}_vs_${sizeLabel(SMALL)}`;
    if (!adminUrl) return [{ name, skipped: "set BENCH_DATABASE_URL or TEST_DATABASE_URL to a PostgreSQL it may create databases on" }];
    const log = (line: string) => console.log(line);
    const largeDb = await seededDatabase(adminUrl, pace.largePlans, log);
    const smallDb = await seededDatabase(adminUrl, SMALL, log);
    const large = await startStack({ adminUrl, database: largeDb, contacts: CONTACTS });
    let small: Stack | undefined;
    try {
      small = await startStack({ adminUrl, database: smallDb, contacts: CONTACTS });
      const p50 = (stack: Stack) => async () => {
        const times: number[] = [];
        for (let i = 0; i < pace.rounds * 8; i++) {
          const started = performance.now();
          await stack.submit(randomInt(1, CONTACTS + 1));
          times.push(performance.now() - started);
        }
        return median(times);
      };
      const blocks = await alternate(pace.blocks, p50(large), p50(small!));
      return [
        {
          name,
          unit: "ms",
          ...blocks,
          goal: { atMost: 1.2 },
          note: `"product" = ${sizeLabel(pace.largePlans)} stored plans, "floor" = ${sizeLabel(SMALL)}; ${pace.rounds * 8} sequential intakes per block${pace.quick ? "; --quick: 100 k, not 1 M" : ""}`,
        },
      ];
    } finally {
      await small?.stop();
      await large.stop();
    }
  },
};
