import { describe } from "vitest";
import { chromiumAvailable } from "../support/chromium.ts";
import { pglite } from "../support/databases.ts";
import { browserScenarios } from "../e2e/browser-scenarios.ts";

// The Chromium scenarios on PGlite; browser-postgres.test.ts runs them on PostgreSQL. Both live in
// test/slow (npm run test:slow): a Chromium run costs ~56 s of a worker, which kept `npm test`
// over five minutes. npm test still covers the browser door over HTTP (read-rights, plan-list,
// oidc, fuzz) without a browser.
describe.skipIf(!chromiumAvailable)("browser review in Chromium on 'pglite'", () => browserScenarios(pglite));
