import type { ExecutorConfig } from "../../config/load.ts";
import { type GrantKey, GrantKeys } from "../../contract/executor-api.ts";
import { loadVerifyingKeys } from "../../grant/keys.ts";
import { bounded, type CheckResult, fail, NETWORK_TIMEOUT_MS, pass } from "./check.ts";

/**
 * What the server at COUNTERSIGN_URL answered: `/healthz` (Countersign's names its environment),
 * then, if it is Countersign, `GET /v1/executor/keys` with the executor token: refused, no such
 * route (an older server), or the keys. Both GETs: nothing is claimed.
 */
export interface ServerProbe {
  health: { status: number; environment: string | undefined };
  keys: { status: "refused"; message: string } | { status: "unlisted" } | { status: "listed"; keys: GrantKey[] } | undefined;
}

const UNREACHED = "start serve there, or fix COUNTERSIGN_URL";

/** Asked once: the three checks below read the same answers. Throws when the server is not reached. */
export async function probeServer(config: ExecutorConfig): Promise<ServerProbe> {
  const get = (path: string, headers: Record<string, string> = {}) =>
    fetch(new URL(`${config.serverUrl.replace(/\/+$/, "")}${path}`), { headers, redirect: "manual", signal: AbortSignal.timeout(NETWORK_TIMEOUT_MS) });
  const healthz = await get("/healthz");
  const environment = (parsedOrEmpty(await healthz.text()) as { environment?: unknown }).environment;
  const health = { status: healthz.status, environment: typeof environment === "string" ? environment : undefined };
  if (health.status !== 200 || health.environment === undefined) return { health, keys: undefined };

  const response = await get("/v1/executor/keys", { authorization: `Bearer ${config.executorToken}` });
  const text = await response.text();
  if (response.status === 401) {
    const message = (parsedOrEmpty(text) as { error?: { message?: unknown } }).error?.message;
    return { health, keys: { status: "refused", message: typeof message === "string" ? message : "HTTP 401" } };
  }
  if (response.status === 404) return { health, keys: { status: "unlisted" } };
  if (!response.ok) throw new Error(`GET /v1/executor/keys answered HTTP ${response.status}`);
  const keys = GrantKeys.safeParse(parsedOrEmpty(text));
  if (!keys.success) throw new Error("GET /v1/executor/keys answered a body that is not the executor API's list of keys");
  return { health, keys: { status: "listed", keys: keys.data.keys } };
}

/** Countersign answers at COUNTERSIGN_URL, in the same `environment` (every grant names it). */
export function serverReachable(config: ExecutorConfig, probe: Promise<ServerProbe>): Promise<CheckResult> {
  const what = `server at ${config.serverUrl}`;
  return bounded(what, UNREACHED, async () => {
    const { health } = await probe;
    if (health.environment === undefined)
      return fail(
        `${what}: GET /healthz answered HTTP ${health.status}, not as Countersign does`,
        "set COUNTERSIGN_URL to the server's own URL, the one agents use",
      );
    if (health.environment !== config.environment)
      return fail(
        `${what}: its environment is '${health.environment}', this config's '${config.environment}'`,
        "serve and executor must load the same environment; grants name it, so this executor would refuse every one",
      );
    return pass(`${what}: answers, environment '${health.environment}' as here`);
  });
}

/** The executor API accepts COUNTERSIGN_EXECUTOR_TOKEN. */
export function executorTokenAccepted(config: ExecutorConfig, probe: Promise<ServerProbe>): Promise<CheckResult> {
  const what = `server at ${config.serverUrl}`;
  return bounded(`${what} (executor token)`, UNREACHED, async () => {
    const { keys } = await probe;
    if (keys === undefined) return fail(`${what}: COUNTERSIGN_EXECUTOR_TOKEN not tried, as no Countersign answers there`, UNREACHED);
    if (keys.status === "refused")
      return fail(`${what}: COUNTERSIGN_EXECUTOR_TOKEN refused (${keys.message})`, "set it to the server's COUNTERSIGN_EXECUTOR_TOKEN");
    return pass(`${what}: COUNTERSIGN_EXECUTOR_TOKEN accepted by the executor API`);
  });
}

/** COUNTERSIGN_GRANT_PUBLIC_KEY holds a key the server signs grants with, compared by key id. */
export function grantKeyShared(config: ExecutorConfig, probe: Promise<ServerProbe>): Promise<CheckResult> {
  const what = "grant key";
  return bounded(what, UNREACHED, async () => {
    let ours: string[];
    try {
      ours = [...(await loadVerifyingKeys(config.grantPublicKeyPem)).byKid.keys()];
    } catch (err) {
      return fail(
        `${what}: COUNTERSIGN_GRANT_PUBLIC_KEY cannot be read (${(err as Error).message})`,
        "set it to the SPKI PEM 'countersign keys generate' printed",
      );
    }
    const held = ours.map((k) => `\`${k}\``).join(", ");
    const { keys } = await probe;
    if (keys === undefined) return fail(`${what}: ${held} not compared, as no Countersign answers at ${config.serverUrl}`, UNREACHED);
    if (keys.status === "refused")
      return fail(`${what}: ${held} not compared, as the server refused the executor token`, "fix COUNTERSIGN_EXECUTOR_TOKEN first");
    if (keys.status === "unlisted")
      return pass(`${what}: the server does not list its keys (an older version); each grant is checked with ${held} as it comes`);
    const shared = keys.keys.filter((k) => ours.includes(k.kid));
    if (shared.length > 0) return pass(`${what}: the server signs with \`${shared[0]!.kid}\`, which COUNTERSIGN_GRANT_PUBLIC_KEY holds`);
    return fail(
      `${what}: COUNTERSIGN_GRANT_PUBLIC_KEY holds ${held}, but the server signs with ${keys.keys.map((k) => `\`${k.kid}\` (${k.fingerprint})`).join(", ")}`,
      "set COUNTERSIGN_GRANT_PUBLIC_KEY to the public half of the server's COUNTERSIGN_GRANT_PRIVATE_KEY ('countersign keys generate' prints both)",
    );
  });
}

function parsedOrEmpty(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return {};
  }
}
