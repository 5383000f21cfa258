import { describe } from "vitest";
import { chromiumAvailable } from "../support/chromium.ts";
import { postgresKind } from "../support/databases.ts";
import { browserScenarios } from "../e2e/browser-scenarios.ts";

// The Chromium scenarios of browser-pglite.test.ts on PostgreSQL, where live updates arrive
// through LISTEN/NOTIFY.
describe.skipIf(!chromiumAvailable || !postgresKind)("browser review in Chromium on 'postgres'", () => browserScenarios(postgresKind!));
