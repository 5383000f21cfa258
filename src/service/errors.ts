import type { ErrorCode } from "../contract/error-codes.ts";

export interface Issue {
  /** JSON Pointer into the request, "" for the whole of it. */
  path: string;
  message: string;
}

export class ServiceError extends Error {
  readonly code: ErrorCode;
  readonly issues: Issue[] | undefined;
  readonly details: Record<string, unknown> | undefined;
  constructor(code: ErrorCode, message: string, extra: { issues?: Issue[]; details?: Record<string, unknown> } = {}) {
    super(message);
    this.name = "ServiceError";
    this.code = code;
    this.issues = extra.issues;
    this.details = extra.details;
  }
}

export function isServiceError(err: unknown, code?: ErrorCode): err is ServiceError {
  return err instanceof ServiceError && (code === undefined || err.code === code);
}
