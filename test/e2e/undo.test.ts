import { pglite } from "../support/databases.ts";
import { undoScenarios } from "./undo-scenarios.ts";

undoScenarios(pglite);
