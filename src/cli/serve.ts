import type { ServerConfig } from "../config/load.ts";
import { createLogger } from "../logging/logger.ts";
import { runServer } from "../server/run-server.ts";
import type { StopSignals } from "./stop-signals.ts";

/** `countersign serve`: the server alone, on the config's database, until a signal. */
export async function serve(config: ServerConfig, signals: StopSignals): Promise<number> {
  const logger = createLogger(config.logLevel);
  const server = await runServer({ config, logger });
  return signals.untilStopped(() => server.close());
}
