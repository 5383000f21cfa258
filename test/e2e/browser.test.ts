import { describe } from "vitest";
import { chromiumAvailable } from "../support/chromium.ts";
import { pglite } from "../support/databases.ts";
import { browserScenarios } from "./browser-scenarios.ts";

// The same scenarios on PostgreSQL are test/slow/browser-postgres.test.ts (npm run test:slow):
// the pages do not depend on the database, and one Chromium run per database doubled the time.
describe.skipIf(!chromiumAvailable)("browser review in Chromium on 'pglite'", () => browserScenarios(pglite));
