import { LogLevel, type Logger as SlackLogger } from "@slack/bolt";
import type { Logger } from "pino";
import { scrubText } from "../logging/log-redaction.ts";

const ORDER: LogLevel[] = [LogLevel.DEBUG, LogLevel.INFO, LogLevel.WARN, LogLevel.ERROR];

/**
 * Bolt, its receivers and its Web API client log through Countersign's logger instead of the
 * console: an error a listener throws (a failed query with its parameters, say) then passes the
 * same serializer as every other log line.
 */
export function boltLogger(logger: Logger, level: LogLevel = LogLevel.WARN): SlackLogger {
  let current = level;
  let log = logger.child({ component: "bolt" });
  const emit = (at: LogLevel, parts: unknown[]) => {
    if (ORDER.indexOf(at) < ORDER.indexOf(current)) return;
    const err = parts.find((p) => p instanceof Error);
    const text = parts
      .filter((p) => !(p instanceof Error))
      .map((p) => scrubText(typeof p === "string" ? p : safeJson(p), false))
      .join(" ");
    log[at](err ? { err } : {}, text || (err as Error | undefined)?.name || "");
  };
  return {
    debug: (...parts: unknown[]) => emit(LogLevel.DEBUG, parts),
    info: (...parts: unknown[]) => emit(LogLevel.INFO, parts),
    warn: (...parts: unknown[]) => emit(LogLevel.WARN, parts),
    error: (...parts: unknown[]) => emit(LogLevel.ERROR, parts),
    setLevel: (next: LogLevel) => void (current = next),
    getLevel: () => current,
    setName: (name: string) => void (log = logger.child({ component: name })),
  };
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
