import { describe } from "vitest";
import { pglite } from "../support/databases.ts";
import { delegationScenarios } from "./delegation-scenarios.ts";

// On PGlite over Slack's HTTP door here; over Socket Mode on PostgreSQL in test/slow/delegation-socket-mode.test.ts.
describe("delegating while away on 'pglite' over HTTP", () => delegationScenarios(pglite, "http"));
