import { describe, it } from "vitest";
import { postgresKind } from "../support/databases.ts";
import { editScenarios } from "../e2e/edit-scenarios.ts";

// test/e2e/edit.test.ts runs these on PGlite over HTTP at desktop width in `npm test`; here over
// Socket Mode on PostgreSQL, with the page at phone width (test:slow).
if (postgresKind) editScenarios(postgresKind, "socket", { browser: { name: "phone", viewport: { width: 390, height: 844 } } });
else describe.skip("edit scenarios on PostgreSQL over Socket Mode (TEST_DATABASE_URL is not set)", () => it("skipped", () => {}));
