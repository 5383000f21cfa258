import type { ServerConfig } from "../config/load.ts";
import { createLogger } from "../logger.ts";
import { runServer } from "../server/run-server.ts";
import { untilStopped } from "./until-stopped.ts";

/** `countersign serve`: the server alone, on the config's database, until a signal. */
export async function serve(config: ServerConfig): Promise<number> {
  const logger = createLogger(config.logLevel);
  const server = await runServer({ config, logger });
  return untilStopped(() => server.close());
}
