import type { Logger } from "pino";
import type { ReadOnlyHttp } from "../adapters/read-only-http.ts";
import type { TargetReaders } from "../adapters/target-readers.ts";
import type { Config } from "../config/load.ts";
import type { SigningKey } from "../grant/keys.ts";
import type { RedactionRules } from "../policy/redact.ts";
import type { ApproverDirectory } from "./approver-groups.ts";
import type { Database } from "../store/db.ts";
import type { PlanSignals } from "./plan-signals.ts";
import type { PauseWatch } from "./pause-watch.ts";

/** Everything a service verb may touch, injected once at start. Nothing below reads process.env. */
export interface ServiceContext {
  database: Database;
  config: Pick<Config, "environment" | "publicUrl" | "defaults" | "targets" | "executor" | "webhooks" | "browser" | "admins" | "limits" | "slack">;
  /** User group membership, when Slack is connected; approver groups cannot be checked without it. */
  directory?: ApproverDirectory | undefined;
  /** What counts as a secret, for every view of a plan but the executor's. */
  redaction: RedactionRules;
  /** Signs the grant an approved plan carries to the executor. */
  grantKey: SigningKey;
  /** The only way the server reaches a target: read-only. */
  http: ReadOnlyHttp;
  /** Every configured target's reader (read credential only), opened at start and closed at stop; adapters by kind. */
  targets: TargetReaders;
  clock: () => Date;
  logger: Logger;
  signals: PlanSignals;
  /** This replica's view of the kill switch (issue 16), for what it shows; absent, the pause is read when needed. */
  pause?: PauseWatch | undefined;
  /** Outbox sinks that deliver side effects of every plan event (e.g. "slack"). */
  sinks: readonly string[];
}
