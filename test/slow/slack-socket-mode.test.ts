import { describe } from "vitest";
import { databaseKinds, postgresKind } from "../support/databases.ts";
import { slackDeliveryScenarios, slackDoorScenarios } from "../e2e/slack-scenarios.ts";

// The Slack scenarios of test/e2e/slack.test.ts, with every click, submission and command arriving
// as a Socket Mode envelope, plus the Socket-Mode-only ones (disconnect and reconnect, a lost ack
// redelivered). The Socket Mode emulator and the door's start-up stay in npm test
// (test/e2e/slack-socket-mode.test.ts).
describe.each(databaseKinds)("Slack door on $name over Socket Mode", (kind) => slackDoorScenarios(kind, "socket"));
describe.skipIf(!postgresKind)("Slack delivery and concurrency on PostgreSQL over Socket Mode", () => slackDeliveryScenarios(postgresKind!, "socket"));
