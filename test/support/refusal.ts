import { ServiceError } from "../../src/service/errors.ts";

/** The ServiceError a promise rejects with; fails the test if it resolves or throws anything else. */
export async function refusal(promise: Promise<unknown>): Promise<ServiceError> {
  let outcome: unknown;
  try {
    outcome = await promise;
  } catch (err) {
    if (err instanceof ServiceError) return err;
    throw err;
  }
  throw new Error(`expected a ServiceError, got a result: ${JSON.stringify(outcome).slice(0, 300)}`);
}
