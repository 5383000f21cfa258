import { pino, type DestinationStream, type Logger } from "pino";
import { loggableError, loggablePath } from "./log-redaction.ts";

/** Credentials are redacted wherever they appear under these names, one level deep. */
const REDACT_PATHS = [
  "authorization", "*.authorization", "headers.*", "*.headers.*",
  "cookie", "*.cookie", "password", "*.password", "secret", "*.secret", "token", "*.token",
  "key", "*.key", "adminToken", "*.adminToken", "params", "*.params",
];

/**
 * Every logger in a Countersign process (server, executor, CLI) comes from here, so one rule
 * decides what an error may say in a log line: never its query parameters or the values a
 * database quotes back (see log-redaction.ts). JSON lines on stdout, or on `destination`.
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options = {
    level,
    serializers: { err: loggableError, error: loggableError, path: loggablePath },
    redact: { paths: REDACT_PATHS, censor: "[redacted]" },
  };
  return destination ? pino(options, destination) : pino(options);
}
