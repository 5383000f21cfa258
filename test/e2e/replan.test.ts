import { pglite } from "../support/databases.ts";
import { replanScenarios } from "./replan-scenarios.ts";

replanScenarios(pglite);
