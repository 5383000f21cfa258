import type { z } from "zod";
import { EnvConfig } from "../config/schema.ts";

/** Who reads a variable: `serve`, `executor`, `start`, or the one-shot commands that open the database. */
export type EnvReader = "server" | "executor" | "start" | "database";

type Variable = keyof z.infer<typeof EnvConfig>;

/** What each variable of the env schema means, and who reads it; a variable added to the schema without a line here fails the type check. */
const VARIABLES: Record<Variable, { readers: EnvReader[]; says: string }> = {
  PORT: { readers: ["server", "start"], says: "the port to listen on (0: any free one)" },
  HOST: { readers: ["server"], says: "the interface to listen on (start always uses 127.0.0.1)" },
  PUBLIC_URL: { readers: ["server", "start"], says: "the URL people and Slack reach the server at (default http://localhost:PORT)" },
  DATABASE_URL: { readers: ["server", "start", "database"], says: "PostgreSQL (postgres://…); absent: the embedded PGlite in COUNTERSIGN_DATA_DIR" },
  COUNTERSIGN_DATA_DIR: { readers: ["server", "start", "database"], says: "where the embedded database (and, without a key, the grant key) is kept" },
  COUNTERSIGN_CONFIG: {
    readers: ["server", "executor", "start", "database"],
    says: "the config file (default ./countersign.yml; see countersign.example.yml)",
  },
  LOG_LEVEL: { readers: ["server", "executor", "start"], says: "fatal, error, warn, info, debug, trace or silent" },
  COUNTERSIGN_GRANT_PRIVATE_KEY: {
    readers: ["server", "start"],
    says: "PKCS#8 PEM of the key that signs grants ('countersign keys generate'); required with DATABASE_URL",
  },
  COUNTERSIGN_AUDIT_SEAL_KEY: {
    readers: ["server", "start"],
    says: "the key that signs audit seals, never the grant key ('countersign keys generate --audit-seal')",
  },
  COUNTERSIGN_EXECUTOR_TOKEN: {
    readers: ["server", "executor", "start"],
    says: "the executor API's shared secret (16+ characters); the same on server and executor. Without it `serve` refuses to start, unless `executor.expected` is false",
  },
  COUNTERSIGN_METRICS_TOKEN: { readers: ["server", "start"], says: "when set, GET /metrics requires it as a bearer token (16+ characters)" },
  SLACK_BOT_TOKEN: { readers: ["server", "start"], says: "the Slack app's bot token (xoxb-…); absent: browser only" },
  SLACK_SIGNING_SECRET: { readers: ["server", "start"], says: "the Slack app's signing secret (HTTP mode)" },
  SLACK_APP_TOKEN: { readers: ["server", "start"], says: "an app-level token (xapp-…): Socket Mode, no public URL needed" },
  SLACK_API_URL: { readers: ["server", "start"], says: "the Slack Web API's base URL (an emulator's, in tests)" },
  COUNTERSIGN_URL: { readers: ["executor"], says: "the server to claim approved plans from" },
  COUNTERSIGN_GRANT_PUBLIC_KEY: {
    readers: ["executor", "start"],
    says: "SPKI PEM(s) of the grant signing key(s) to trust; during a rotation, the old and the new",
  },
};

/** Every variable of the env schema, in its order, with what it means, who reads it and the schema's default; docs/configuration.md lists them from here too. */
export function environmentVariables(): { name: string; readers: EnvReader[]; says: string; fallback: string | undefined }[] {
  return Object.entries(EnvConfig.shape).map(([name, schema]) => ({
    name,
    ...VARIABLES[name as Variable],
    fallback: schema.def.type === "default" ? String((schema.def as { defaultValue: unknown }).defaultValue) : undefined,
  }));
}

/** The usage lines for the variables `reader` reads, in the schema's order, with the schema's defaults. */
export function environmentLines(reader: EnvReader): string[] {
  return environmentVariables()
    .filter((variable) => variable.readers.includes(reader))
    .flatMap(({ name, says, fallback }) => [`${name}${fallback === undefined ? "" : ` (default ${fallback})`}`, `    ${says}`]);
}
