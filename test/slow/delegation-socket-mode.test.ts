import { describe } from "vitest";
import { postgresKind } from "../support/databases.ts";
import { delegationScenarios } from "../e2e/delegation-scenarios.ts";

// The delegation scenarios of test/e2e/delegation.test.ts (there on PGlite over HTTP), with every
// command and click arriving as a Socket Mode envelope, on PostgreSQL.
describe.skipIf(!postgresKind)("delegating while away on 'postgres' over Socket Mode", () => delegationScenarios(postgresKind!, "socket"));
