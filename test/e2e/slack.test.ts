import { describe } from "vitest";
import { databaseKinds, postgresKind } from "../support/databases.ts";
import { slackDeliveryScenarios, slackDoorScenarios } from "./slack-scenarios.ts";

// The same scenarios run over Socket Mode in test/slow/slack-socket-mode.test.ts (npm run test:slow).
describe.each(databaseKinds)("Slack door on $name over HTTP", (kind) => slackDoorScenarios(kind, "http"));
describe.skipIf(!postgresKind)("Slack delivery and concurrency on PostgreSQL over HTTP", () => slackDeliveryScenarios(postgresKind!, "http"));
