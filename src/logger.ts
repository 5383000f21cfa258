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
 *
 * Stdout is written asynchronously (sonic-boom's `sync: false`): a line is queued and written
 * by libuv's thread pool, so a request no longer waits on a write(2) to a pipe that may be slow
 * to drain (pino's default writes every line synchronously; ~5 % of `serve`'s CPU at intake).
 * pino registers the stream with on-exit-leak-free, which flushes it synchronously on
 * `process.exit`, on a fatal uncaught error and on `beforeExit`, so no line logged before a
 * normal or fatal exit is lost; test/e2e/async-log-flush.test.ts checks each. Only SIGKILL
 * (or a signal with no handler) can drop the last queued lines.
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options = {
    level,
    serializers: { err: loggableError, error: loggableError, path: loggablePath },
    redact: { paths: REDACT_PATHS, censor: "[redacted]" },
  };
  return pino(options, destination ?? pino.destination({ dest: 1, sync: false }));
}
