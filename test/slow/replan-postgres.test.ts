import { describe, it } from "vitest";
import { postgresKind } from "../support/databases.ts";
import { replanScenarios } from "../e2e/replan-scenarios.ts";

// test/e2e/replan.test.ts runs these on PGlite in `npm test`; here on PostgreSQL (test:slow).
if (postgresKind) replanScenarios(postgresKind);
else describe.skip("re-plan scenarios on PostgreSQL (TEST_DATABASE_URL is not set)", () => it("skipped", () => {}));
