import { pino, type Logger } from "pino";

/** JSON lines on stdout. Credentials are redacted wherever they appear under these names. */
export function createLogger(level: string): Logger {
  return pino({
    level,
    redact: {
      paths: ["authorization", "*.authorization", "headers.*", "*.headers.*", "key", "*.key", "adminToken", "*.adminToken"],
      censor: "[redacted]",
    },
  });
}
