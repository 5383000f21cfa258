import type { ServerConfig } from "../config/load.ts";
import { createLogger } from "../logging/logger.ts";
import { DEFAULT_SHUTDOWN_SECONDS, runServer } from "../server/run-server.ts";
import type { StopSignals } from "./stop-signals.ts";

/** `countersign serve`: the server alone, on the config's database, until a signal; then it exits within `shutdownSeconds`. */
export async function serve(config: ServerConfig, signals: StopSignals): Promise<number> {
  const logger = createLogger(config.logLevel);
  const server = await runServer({ config, logger });
  return signals.untilStopped(() => server.close(), undefined, { ms: (config.shutdownSeconds ?? DEFAULT_SHUTDOWN_SECONDS) * 1000, setting: "shutdownSeconds" });
}
