import type { z } from "zod";
import type { Change } from "../plan/changes.ts";
import type { AfterApplyMismatch } from "../plan/holds-change.ts";
import type { Json } from "../plan/json.ts";
import type { Refusal } from "../policy/allowlist.ts";

/**
 * One kind of target. An adapter is found by its `kind` in the registry
 * (./registry.ts); submit, watch, the executor and `policy check` are meant to reach targets
 * only through it. Credentials are split by construction: `openReader` gets the read
 * credential and returns the only things preview, revalidation and verification may do;
 * `openWriter` (the executor alone) gets the write credential and can only apply. So "preview
 * has no write capability" is a property of the types, and the conformance kit
 * (test/support/adapter-conformance.ts) proves it against a credential that cannot write.
 * docs/adapters.md, "How the service reaches targets", says where each is used.
 */
export interface Adapter<Action extends AdapterAction = AdapterAction, Planned extends AdapterPlanned = AdapterPlanned, Target = unknown> {
  readonly kind: string;
  /** What an agent may send as one action of this kind. */
  readonly actionSchema: z.ZodType<Action>;
  /** What the preview fixes for the executor: hashed into the plan, so it must be plain JSON. */
  readonly plannedSchema: z.ZodType<Planned>;
  /** A target's config block (`targets.<name>`), credentials included. */
  readonly targetSchema: z.ZodType<Target>;
  /**
   * The op and path the allowlist, risk rules, redaction and `ActionOutcome.path` see, from
   * the action alone (before anything is read). Throws an `AdapterError` (permanent) when the
   * target's config does not let agents address what the action names.
   */
  address(name: string, target: Target, action: Action): ActionAddress;
  /**
   * What the target's `allow` block refuses among a plan's actions on it (deny by default),
   * each refusal naming its config key, as `policy/allowlist.ts` does for http.json.
   */
  refusals(name: string, target: Target, actions: readonly { index: number; action: Action }[]): Refusal[];
  /** The target with its read credential only. */
  openReader(name: string, target: Target): TargetReader<Action, Planned>;
  /** The target with its write credential; only the executor calls this. */
  openWriter(name: string, target: Target): TargetWriter<Planned>;
  /**
   * Revalidation's judgement on a state already read (`TargetReader.read`), without I/O: the
   * reader's `revalidate` is one read and this. The watcher reads a resource once and judges
   * every open plan on it with this.
   */
  judge(planned: Planned, seen: { before: Json | null; after: Json | null }, current: TargetState): Revalidation;
  /** Whether retrying after this error (thrown by a reader or writer) can succeed. */
  classify(err: unknown): ErrorClass;
  /**
   * What `policy check` prints about a target beyond its policy, one line each with the config
   * key it comes from: what it reaches, what agents may propose there, how a change is detected.
   */
  describe(name: string, target: Target): { reaches: string; lines: string[] };
}

/** The fields every action and planned action of any kind carries. */
export interface AdapterAction {
  kind: string;
  target: string;
}
export interface AdapterPlanned extends AdapterAction {
  path: string;
  op: string;
  beforeDigest: string;
  afterDigest: string;
}

export interface ActionAddress {
  op: string;
  /** Starts with '/', as allow.paths patterns and ActionOutcome.path expect. */
  path: string;
}

/** What one read of a resource found, in terms every adapter shares. */
export type TargetState = { exists: true; body: Json; version: string | null } | { exists: false };

/** What a reviewer is shown for one action; the wire's ActionPreview with the adapter's own precondition name. */
export interface AdapterPreview {
  target: string;
  path: string;
  op: string;
  before: Json | null;
  after: Json | null;
  /** The version read (ETag, counter, timestamp or xmin as text); null when nothing exists or the target gives none. */
  version: string | null;
  /** How a change since the preview is detected, e.g. "etag", "digest", "version", "xmin", "absent". */
  precondition: string;
  changes: Change[];
}

/**
 * Revalidation's answer, the three cases the executor acts on (src/executor/execute-plan.ts):
 * the target already holds the change (nothing to write, `reconciled`), the precondition still
 * holds (write), or the world moved (stale, with what changed since the preview).
 */
export type Revalidation =
  | { state: "held" }
  | { state: "ready" }
  | { state: "stale"; expected: string | null; now: string | null; changedSincePreview: Change[] };

export type ErrorClass = "permanent" | "transient";

/**
 * One apply: `applied` (with `reconciled` when the target already held the after-state and
 * nothing was written), `stale` (the precondition failed; nothing written), `failed` (the
 * target refused for another reason, classified), or `uncertain` (the write may or may not
 * have happened; the executor settles it by `verify`), or `expired` (nothing was sent: too little
 * was left before the deadline `apply` was given when the write could be sent; the executor
 * reports the plan expired).
 */
export type AdapterApplyResult =
  | { status: "applied"; reconciled?: boolean; detail?: string }
  | { status: "stale"; detail: string }
  | { status: "failed"; errorClass: ErrorClass; detail: string }
  | { status: "uncertain"; detail: string }
  | { status: "expired"; detail: string };

/** The re-read after apply: holds the previewed after-state over the changed fields, or where it does not. */
export type Verification = { verified: true } | { verified: false; mismatches: AfterApplyMismatch[] };

export interface TargetReader<Action, Planned> {
  /**
   * Read with the read credential and fix what the executor will insist on. Throws an
   * `AdapterError` naming what is wrong (a missing resource, a value of the wrong type …).
   */
  preview(action: Action): Promise<{ planned: Planned; preview: AdapterPreview }>;
  /** One fresh read of the resource a planned action addresses. */
  read(planned: Planned): Promise<TargetState>;
  /** Does the precondition still hold, given the before/after the reviewers saw? */
  revalidate(planned: Planned, seen: { before: Json | null; after: Json | null }): Promise<Revalidation>;
  /** Re-read after apply. */
  verify(planned: Planned, seen: { before: Json | null; after: Json | null }): Promise<Verification>;
  close(): Promise<void>;
}

export interface TargetWriter<Planned> {
  /**
   * The longest a write may still land after `apply` is called (the target's timeout): the
   * executor starts a write only while at least this much of the grant is left.
   */
  readonly timeoutMs: number;
  /**
   * Conditional on the planned precondition, and safe to repeat with the same key. Never throws.
   * `deadline` (a `performance.now()` instant: the grant's expiry on the executor's monotonic
   * clock; none when omitted) is when the write must have landed or be over: what comes before
   * the write itself (a reconnect, a catalogue read) counts against it, so the adapter checks the
   * time left again right before it sends the write, bounds the write by it, and answers
   * `expired` without writing when too little is left.
   */
  apply(planned: Planned, idempotencyKey: string, deadline?: number): Promise<AdapterApplyResult>;
  close(): Promise<void>;
}

/** What `policy check` says of a target without an `allow` block, whatever its kind. */
export const NOTHING_ALLOWED = "may propose: NOTHING — no 'allow' block, so every plan for this target is refused (deny by default)";

/** An error an adapter throws, with whether trying again later can help. */
export class AdapterError extends Error {
  readonly errorClass: ErrorClass;
  readonly target: string;
  readonly path: string | undefined;
  constructor(errorClass: ErrorClass, target: string, message: string, path?: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "AdapterError";
    this.errorClass = errorClass;
    this.target = target;
    this.path = path;
  }
}
