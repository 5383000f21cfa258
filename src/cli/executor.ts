import { ConfigError, type ExecutorConfig } from "../config/load.ts";
import { runExecutor } from "../executor/run-executor.ts";
import { executorServer } from "../executor/server-client.ts";
import { loadVerifyingKeys } from "../grant/keys.ts";
import { createLogger } from "../logging/logger.ts";

/**
 * `countersign executor`: the only process with write credentials. Runs until stopped, or until
 * `refused` says in one line why it cannot run (its grant public key is not the server's).
 */
export async function startExecutor(config: ExecutorConfig): Promise<{ stop(): Promise<void>; refused: Promise<string> }> {
  let keys: Awaited<ReturnType<typeof loadVerifyingKeys>>;
  try {
    keys = await loadVerifyingKeys(config.grantPublicKeyPem);
  } catch (err) {
    throw new ConfigError("environment", [{ key: "COUNTERSIGN_GRANT_PUBLIC_KEY", message: `is not a usable Ed25519 public key (${(err as Error).message})` }]);
  }
  const logger = createLogger(config.logLevel).child({ process: "executor" });
  const executor = runExecutor({
    server: executorServer(config.serverUrl, config.executorToken),
    keys,
    environment: config.environment,
    targets: config.targets,
    logger,
  });
  logger.info(
    {
      server: config.serverUrl,
      environment: config.environment,
      targets: Object.fromEntries(Object.entries(config.targets).map(([name, t]) => [name, t.adapter])),
      keys: [...keys.byKid.keys()],
    },
    "executor running",
  );
  return executor;
}
