import { plans } from "../../../src/store/schema.ts";
import type { TestDatabaseKind } from "../../support/databases.ts";
import { type HarnessOptions, type SuiteHarness, useHarness } from "../../support/use-harness.ts";

/** The submitPlan files' harness on a database of `kind`, and how many plans that database holds (a refusal stores none). */
export function useSubmitHarness(kind: TestDatabaseKind, options: HarnessOptions = {}): { h: SuiteHarness; planCount: () => Promise<number> } {
  const h = useHarness(kind, options);
  return { h, planCount: () => h.database.db.$count(plans) };
}
