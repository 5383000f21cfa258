import { describe } from "vitest";
import { databaseKinds } from "../support/databases.ts";
import { fuzzTarget, itAnswersFuzzedRequests } from "../support/fuzz-requests.ts";

/**
 * The long seeded run (`npm run test:slow`): 10 000 hostile requests per database, CPU-bound
 * (60-95 s per database at load 10 on this machine). `npm test` runs the same generator for
 * 2 000 requests in test/integration/scenarios/fuzz-requests.test.ts, which checks it sends every shape.
 */
describe.each(databaseKinds)("10 000 fuzzed requests against the HTTP app on $name", (kind) => {
  itAnswersFuzzedRequests(fuzzTarget(kind), 10_000);
});
