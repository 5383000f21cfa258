import { describe, it } from "vitest";
import { postgresKind } from "../support/databases.ts";
import { undoScenarios } from "../e2e/undo-scenarios.ts";

// test/e2e/undo.test.ts runs these on PGlite over HTTP in `npm test`; here over Socket Mode on PostgreSQL (test:slow).
if (postgresKind) undoScenarios(postgresKind, "socket");
else describe.skip("undo scenarios on PostgreSQL over Socket Mode (TEST_DATABASE_URL is not set)", () => it("skipped", () => {}));
