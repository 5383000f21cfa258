import { describe } from "vitest";
import { pglite, postgresKind } from "../support/databases.ts";
import { slackDeliveryScenarios, slackDoorScenarios } from "./slack-scenarios.ts";

// The door scenarios run here on PGlite; on PostgreSQL they are test/slow/slack-postgres.test.ts,
// and over Socket Mode test/slow/slack-socket-mode.test.ts (npm run test:slow). The delivery and
// concurrency scenarios need PostgreSQL's row locks and stay here.
describe("Slack door on 'pglite' over HTTP", () => slackDoorScenarios(pglite, "http"));
describe.skipIf(!postgresKind)("Slack delivery and concurrency on PostgreSQL over HTTP", () => slackDeliveryScenarios(postgresKind!, "http"));
