import { describe, expect, it } from "vitest";
import type { Claim } from "../../../src/contract/executor-api.ts";
import type { Outcome } from "../../../src/plan/outcome.ts";
import { runExecutor } from "../../../src/executor/run-executor.ts";
import { publicKeyFingerprint } from "../../../src/grant/keys.ts";
import { ReportRefused, type ExecutorServer } from "../../../src/executor/server-client.ts";
import { silentLogger } from "../../support/harness.ts";
import { waitFor } from "../../support/wait-for.ts";
import { claimOf, grantFor, keys, mark, merge, propose, seed, target, targets, useExecutorTarget, writesTo } from "./execute-plan-setup.ts";

useExecutorTarget();

describe("runExecutor: a report the server refuses for good is not resent forever", () => {
  /** A real ExecutorServer in memory: hands out one claim, then none; answers reports as the test says. */
  function oneClaimServer(claim: Claim, answerReport: (n: number, outcome: Outcome) => boolean | Error) {
    const reports: Outcome[] = [];
    let claims = 0;
    const server: ExecutorServer = {
      keys: async () => ({ keys: [{ kid: keys.signing.kid, fingerprint: publicKeyFingerprint(keys.signing.key) }] }),
      async claim(_kids, signal) {
        claims++;
        if (claims === 1) return claim;
        await new Promise((resolve) => (signal?.aborted ? resolve(undefined) : signal?.addEventListener("abort", resolve, { once: true })));
        return undefined;
      },
      heartbeat: async () => true,
      async report(_token, outcome) {
        reports.push(outcome);
        const answer = answerReport(reports.length, outcome);
        if (answer instanceof Error) throw answer;
        return answer;
      },
    };
    return { server, reports, claims: () => claims };
  }

  async function claimFor(): Promise<Claim> {
    const path = seed({ v: 1 });
    const { doc, preview } = await propose([merge(path, { v: 2 })]);
    return claimOf(doc, preview, await grantFor(doc));
  }

  it("a 4xx to the full report → the minimal report once; accepted, and the executor moves on", async () => {
    const fake = oneClaimServer(await claimFor(), (n) => (n === 1 ? new ReportRefused(400, '{"error":{"code":"invalid_request"}}') : true));
    const executor = runExecutor({ server: fake.server, keys: keys.verifying, environment: "test", targets, logger: silentLogger });
    try {
      await waitFor("the executor to ask for its next claim", () => fake.claims() >= 2);
    } finally {
      await executor.stop();
    }
    expect(fake.reports).toHaveLength(2);
    expect(fake.reports[0]!.status).toBe("applied");
    expect(fake.reports[1]).toMatchObject({ status: "applied", reason: expect.stringMatching(/the server refused the full report: .*HTTP 400/) });
  });

  it("a 4xx to the minimal report too → logged and left: exactly two reports, then the next claim", async () => {
    const fake = oneClaimServer(await claimFor(), () => new ReportRefused(422, "nope"));
    const executor = runExecutor({ server: fake.server, keys: keys.verifying, environment: "test", targets, logger: silentLogger });
    try {
      await waitFor("the executor to ask for its next claim", () => fake.claims() >= 2);
    } finally {
      await executor.stop();
    }
    expect(fake.reports).toHaveLength(2);
  });

  it("stopped while waiting to retry a transient failure: stop returns at once, nothing is reported or written, the plan is left to its lease", async () => {
    const path = seed({ v: 1 });
    const { doc, preview } = await propose([merge(path, { v: 2 })]);
    const fake = oneClaimServer(claimOf(doc, preview, await grantFor(doc)), () => true);
    const m = mark();
    target.beforeHandle = (r) => {
      target.failWith = r.method === "GET" && r.path === path ? { status: 503, body: "maintenance" } : undefined;
    };
    const executor = runExecutor({ server: fake.server, keys: keys.verifying, environment: "test", targets, logger: silentLogger });
    try {
      await waitFor("the executor to retry the re-read", () => target.requests.slice(m).filter((r) => r.path === path).length >= 2);
    } finally {
      const stopping = performance.now();
      await executor.stop();
      // The lease (60 s) leaves 30 s of retries; stopping does not wait them out.
      expect(performance.now() - stopping).toBeLessThan(20_000);
    }
    expect(fake.reports).toStrictEqual([]);
    expect(writesTo([path], m)).toHaveLength(0);
  });

  it("a transient failure (5xx, network) is retried until the server takes the report", async () => {
    const fake = oneClaimServer(await claimFor(), (n) => (n < 3 ? new Error("server answered HTTP 503") : true));
    const executor = runExecutor({ server: fake.server, keys: keys.verifying, environment: "test", targets, logger: silentLogger });
    try {
      await waitFor("the executor to ask for its next claim", () => fake.claims() >= 2);
    } finally {
      await executor.stop();
    }
    expect(fake.reports).toHaveLength(3);
    expect(fake.reports.map((r) => r.status)).toStrictEqual(["applied", "applied", "applied"]);
    expect(fake.reports[2]!.reason).toBeUndefined();
  });
});
