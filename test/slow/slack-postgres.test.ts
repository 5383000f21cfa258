import { describe } from "vitest";
import { postgresKind } from "../support/databases.ts";
import { slackDoorScenarios } from "../e2e/slack-scenarios.ts";

// The Slack door scenarios of test/e2e/slack.test.ts (there on PGlite) on PostgreSQL, over HTTP.
describe.skipIf(!postgresKind)("Slack door on 'postgres' over HTTP", () => slackDoorScenarios(postgresKind!, "http"));
