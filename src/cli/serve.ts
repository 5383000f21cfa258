import { ConfigError, type ServerConfig } from "../config/load.ts";
import { createLogger } from "../logging/logger.ts";
import { DEFAULT_SHUTDOWN_SECONDS, runServer } from "../server/run-server.ts";
import type { StopSignals } from "./stop-signals.ts";

/** `countersign serve`: the server alone, on the config's database, until a signal; then it exits within `shutdownSeconds`. */
export async function serve(config: ServerConfig, signals: StopSignals): Promise<number> {
  // Without the token no executor can claim, and approved plans would look decided while nothing applies them.
  if (!config.executorToken && config.executor.expected !== false)
    throw new ConfigError("environment", [
      {
        key: "COUNTERSIGN_EXECUTOR_TOKEN",
        message:
          "is not set, so no executor could claim an approved plan and none would ever be applied; set the same long random secret here and on each executor, or set `executor: { expected: false }` in the config file to run without one",
      },
    ]);
  const logger = createLogger(config.logLevel);
  const server = await runServer({ config, logger });
  return signals.untilStopped(() => server.close(), undefined, { ms: (config.shutdownSeconds ?? DEFAULT_SHUTDOWN_SECONDS) * 1000, setting: "shutdownSeconds" });
}
