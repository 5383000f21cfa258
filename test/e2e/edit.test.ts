import { pglite } from "../support/databases.ts";
import { editScenarios } from "./edit-scenarios.ts";

// Over Slack's HTTP door and in the browser, on PGlite; test/slow/edit-socket-postgres.test.ts
// runs the Slack part over Socket Mode on PostgreSQL.
editScenarios(pglite, "http", { browser: { name: "desktop", viewport: { width: 1280, height: 900 } } });
