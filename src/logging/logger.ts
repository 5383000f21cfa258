import { pino, type DestinationStream, type Logger } from "pino";
import { loggableError, loggablePath } from "./log-redaction.ts";

/** Credentials are redacted wherever they appear under these names, one level deep. */
const REDACT_PATHS = [
  "authorization",
  "*.authorization",
  "headers.*",
  "*.headers.*",
  "cookie",
  "*.cookie",
  "password",
  "*.password",
  "secret",
  "*.secret",
  "token",
  "*.token",
  "key",
  "*.key",
  "adminToken",
  "*.adminToken",
  "params",
  "*.params",
];

/**
 * Every logger in a Countersign process (server, executor, CLI) comes from here, so one rule
 * decides what an error may say in a log line: never its query parameters or the values a
 * database quotes back (see log-redaction.ts). JSON lines on stdout, or on `destination`.
 *
 * Stdout is written asynchronously and in batches (batchedStdout). pino registers the stream with
 * on-exit-leak-free, which flushes it synchronously on `process.exit`, on a fatal uncaught error
 * and on `beforeExit`, so no line logged before a normal or fatal exit is lost;
 * test/e2e/async-log-flush.test.ts checks each. Only SIGKILL (or a signal with no handler) can
 * drop the lines of the last LOG_FLUSH_MS.
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options = {
    level,
    serializers: { err: loggableError, error: loggableError, path: loggablePath },
    redact: { paths: REDACT_PATHS, censor: "[redacted]" },
  };
  return pino(options, destination ?? batchedDestination(1));
}

/** A line waits at most this long for the lines after it (then goes out alone). */
export const LOG_FLUSH_MS = 100;
/** Lines are written once this many bytes wait (sonic-boom's `minLength`; below its 16 KiB `maxWrite`). */
const LOG_BATCH_BYTES = 8192;

/**
 * An asynchronous sonic-boom on `fd` that writes lines together: once LOG_BATCH_BYTES wait, or
 * LOG_FLUSH_MS after the first of them, whichever comes first. Each write(2) of its own wakes a
 * libuv pool thread, the loop again when it is done, and the reader of the pipe; one write per
 * request costs `serve` several per cent of its CPU at intake, so lines go out in batches. pino's
 * default writes every line synchronously, and `sync: false` writes each line alone.
 *
 * sonic-boom's `flush()` does nothing while a write is under way, and lines logged meanwhile stay
 * below `minLength` after it: so the timer is armed again at 'drain' while any byte given to the
 * stream is not yet written ('write' reports the bytes written). No timer runs while nothing waits.
 */
export function batchedDestination(fd: number): ReturnType<typeof pino.destination> {
  const stream = pino.destination({ dest: fd, sync: false, minLength: LOG_BATCH_BYTES });
  let given = 0;
  let written = 0;
  let timer: NodeJS.Timeout | undefined;
  const flushSoon = () => {
    if (timer === undefined)
      timer = setTimeout(() => {
        timer = undefined;
        if (written < given) stream.flush();
      }, LOG_FLUSH_MS).unref();
  };
  const write = stream.write.bind(stream);
  stream.write = (line: string) => {
    given += Buffer.byteLength(line);
    flushSoon();
    return write(line);
  };
  stream.on("write", (bytes: number) => {
    written += bytes;
  });
  stream.on("drain", () => {
    if (written < given) flushSoon();
  });
  return stream;
}
