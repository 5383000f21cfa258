import type { Logger } from "pino";
import type { ReadOnlyHttp } from "../adapters/read-only-http.ts";
import type { TargetReaders } from "../adapters/target-readers.ts";
import type { Config } from "../config/load.ts";
import type { Claim } from "../contract/executor-api.ts";
import type { SigningKey } from "../grant/keys.ts";
import type { RedactionRules } from "../policy/redact.ts";
import type { Database } from "../store/db.ts";

/** Everything a service verb may touch, injected once at start. Nothing below reads process.env. */
export interface ServiceContext {
  database: Database;
  config: Pick<Config, "environment" | "publicUrl" | "defaults" | "targets" | "executor" | "webhooks" | "browser" | "admins" | "limits" | "slack">;
  /** User group membership, when Slack is connected; approver groups cannot be checked without it. */
  directory?: ApproverDirectory | undefined;
  /** People's display names, when Slack is connected; pages show ids without it. */
  people?: PeopleDirectory | undefined;
  /** Whether someone is a person or a bot, and their time zone, when Slack is connected: a delegation asks it. */
  profiles?: ProfileDirectory | undefined;
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
  /** This replica's view of the kill switch, for what it shows; absent, the pause is read when needed. */
  pause?: PauseView | undefined;
  /** Outbox sinks that deliver side effects of every plan event (e.g. "slack"). */
  sinks: readonly string[];
}

/*
 * The ports a verb reaches through the context. Each is declared here and implemented in the
 * folder that needs the context (access, records, operations), so no implementation is
 * imported by the context it is injected into.
 */

/** Where user group membership comes from (Slack's usergroups.users.list), behind a small port. */
export interface ApproverDirectory {
  membersOf(groupId: string): Promise<readonly string[]>;
}

/** People's display names (Slack's users.info), behind a small port. */
export interface PeopleDirectory {
  displayNameOf(userId: string): Promise<DisplayNameAnswer>;
}

/** A person's profile as far as delegating needs it (Slack's users.info), behind a small port. */
export interface ProfileDirectory {
  /** Undefined when Slack knows no such user; throws when Slack could not answer. */
  profileOf(userId: string): Promise<Profile | undefined>;
}

/** `timeZone`: an IANA name (Slack's `tz`), undefined when Slack gives none. `inactive`: deactivated. */
export interface Profile {
  isBot: boolean;
  inactive: boolean;
  timeZone: string | undefined;
}

/**
 * `name` undefined: Slack has no name for this id. `failed`: Slack's reason it could not answer;
 * `lasting` when asking again soon cannot help (a missing scope, a revoked token).
 */
export type DisplayNameAnswer = { name: string | undefined } | { failed: string; lasting: boolean };

/** Wakes waiters when a plan changes: agents' long-polls, live pages, executors waiting for work. */
export interface PlanSignals {
  /** Where one plan (or, without an id, every plan) stands now; changes whenever it does. */
  version(planId?: string): Promise<string>;
  /** Resolves when the plan changes, `ms` pass, or `signal` aborts. Arm it before reading what it guards. */
  wait(planId: string, ms: number, signal?: AbortSignal): Promise<void>;
  /** Resolves when any plan changes, `ms` pass, or `signal` aborts. */
  waitAny(ms: number, signal?: AbortSignal): Promise<void>;
  /**
   * Waits, as an executor accepting grants signed by `kids` (any, when absent), to be woken to look
   * for work (an approval), or for `ms`; resolves with a claim when an approval made one for it
   * (takeClaimer).
   */
  waitClaimable(ms: number, signal?: AbortSignal, kids?: readonly string[]): Promise<Claim | undefined>;
  /**
   * Takes the longest-waiting executor of this replica that accepts a grant signed by `kid`, for an
   * approval to claim its plan for it in the approval's own transaction; undefined when none waits.
   */
  takeClaimer(kid: string): ClaimHandOff | undefined;
  /** Executors of this replica waiting for work. */
  readonly claimersWaiting: number;
}

/** An executor's wait, taken by an approval (PlanSignals.takeClaimer). */
export interface ClaimHandOff {
  /** Answers the wait with the claim the approval committed; false when the executor's request went away meanwhile. */
  handOff(claim: Claim): boolean;
  /** Lets the executor look for work as usual: the approval rolled back. */
  letGo(): void;
}

/** Countersign is paused: since when, by whom, why. */
export interface PauseState {
  reason: string;
  /** A Slack user id (the browser) or an operating-system user (the CLI). */
  by: string;
  via: "web" | "cli";
  since: string;
}

/** This replica's view of the kill switch. */
export interface PauseView {
  current(): PauseState | undefined;
  /** Re-reads the pause now (after this replica changed it). */
  refresh(): Promise<void>;
}
