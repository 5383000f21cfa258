/**
 * What verifying after apply costs the executor: one GET per written action, after
 * its write and before the report (never on the path from claim to the write). For PLANS one-merge
 * plans, `executePlan` runs against a loopback JSON resource server with the real adapters; the
 * figure is the verify GET's median, against the PATCH before it (same run, same target).
 *   node --import tsx bench/verify-after-apply.ts [PLANS]      (default 300)
 */
import { randomUUID } from "node:crypto";
import os from "node:os";
import type { Adapter } from "../src/adapters/adapter.ts";
import { previewHttpJson } from "../src/adapters/http-json.ts";
import { httpJsonAdapter } from "../src/adapters/http-json-adapter.ts";
import { createReadOnlyHttp } from "../src/adapters/read-only-http.ts";
import { TargetConfig } from "../src/config/schema.ts";
import { JsonResourceServer } from "../src/demo/json-resource-server.ts";
import { executePlan } from "../src/executor/execute-plan.ts";
import { issueGrant } from "../src/grant/grant.ts";
import { generateGrantKeys, loadSigningKey, loadVerifyingKeys } from "../src/grant/keys.ts";
import { fingerprint } from "../src/plan/fingerprint.ts";
import { PlanDocument } from "../src/plan/schema.ts";
import { formatFigure, percentile } from "./figure.ts";

const PLANS = Number(process.argv[2] ?? 300);
if (!Number.isInteger(PLANS) || PLANS < 1) throw new Error(`PLANS must be a positive whole number, got '${process.argv[2]}'`);

const target = new JsonResourceServer({ readTokens: ["read"], writeToken: "write" });
await target.start();
const config = TargetConfig.parse({
  adapter: "http.json",
  baseUrl: target.url,
  read: { headers: { Authorization: "Bearer read" } },
  write: { headers: { Authorization: "Bearer write" } },
  allow: { ops: ["merge"], paths: ["/**"] },
});
const http = createReadOnlyHttp();
const adapter: Adapter<any, any, any> = httpJsonAdapter();
const reader = adapter.openReader("crm", config);
const writer = adapter.openWriter("crm", config);
const pair = await generateGrantKeys();
const signing = await loadSigningKey(pair.privatePem);
const verifying = await loadVerifyingKeys(pair.publicPem);
const write: number[] = [];
const verify: number[] = [];
const whole: number[] = [];
try {
  for (let i = 0; i < PLANS; i++) {
    const path = `/bench/${i}`;
    target.set(path, { id: i, email: "old@example.com", name: "x".repeat(200) });
    const { planned, preview } = await previewHttpJson(http, config, {
      kind: "http.json",
      target: "crm",
      path,
      op: "merge",
      body: { email: `new${i}@example.com` },
    });
    const doc = PlanDocument.parse({
      v: 1,
      id: randomUUID(),
      environment: "bench",
      agent: "bench",
      title: "bench",
      actions: [planned],
      policy: { approvers: ["U0BENCH"], requiredApprovals: 1, grantTtlSeconds: 600 },
      expiresAt: new Date(Date.now() + 900_000).toISOString(),
    });
    const now = new Date();
    const { token } = await issueGrant(signing, {
      planId: doc.id,
      planHash: fingerprint(doc),
      approvers: [{ user: "U0BENCH", via: "slack", at: now.toISOString() }],
      environment: "bench",
      issuedAt: now,
      expiresAt: new Date(now.getTime() + 600_000),
    });
    let wrote: number | undefined;
    let written = 0;
    let verified = 0;
    const start = performance.now();
    const outcome = await executePlan(
      { plan: doc, preview: { actions: [preview] }, grant: token, claimToken: "bench", leaseExpiresAt: "" },
      {
        keys: verifying,
        environment: "bench",
        now: () => new Date(),
        // The built-in http.json adapter, its verify and apply timed.
        target: () => ({
          adapter,
          reader: {
            ...reader,
            async verify(planned, seen) {
              const verification = await reader.verify(planned, seen);
              verified = performance.now();
              return verification;
            },
          },
          writer: {
            ...writer,
            async apply(planned, key) {
              const at = performance.now();
              const result = await writer.apply(planned, key);
              written = performance.now() - at;
              wrote = performance.now();
              return result;
            },
          },
        }),
      },
    );
    whole.push(performance.now() - start);
    if (outcome.actions[0]?.verified !== true) throw new Error(`plan ${i} did not verify: ${JSON.stringify(outcome)}`);
    write.push(written);
    verify.push(verified - wrote!);
  }
} finally {
  await target.stop();
}
const p50 = (xs: number[]) => percentile(xs, 50);
console.log(`${PLANS} one-merge plans, loopback target, load ${os.loadavg()[0]!.toFixed(1)}`);
console.log(
  formatFigure({
    name: "verify_get_ms_p50",
    value: p50(verify),
    unit: "ms",
    goal: { below: 5 },
    baseline: { label: "the PATCH before it", value: p50(write) },
  }),
);
console.log(
  `verify GET p99 ${percentile(verify, 99).toFixed(2)} ms; whole executePlan p50 ${p50(whole).toFixed(2)} ms, p99 ${percentile(whole, 99).toFixed(2)} ms (grant check, revalidation GET, PATCH, verify GET)`,
);
