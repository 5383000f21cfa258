import { z } from "zod";
import { PolicyOverride } from "../policy/policy-config.ts";

const Headers = z.record(z.string().min(1), z.string());
const Credentials = z.strictObject({ headers: Headers.default({}) });

/** What agents may propose on a target: `watch`, the re-reads of open plans' targets, is the server's for every kind. */
export const TargetWatch = z.strictObject({ intervalSeconds: z.int().min(0).max(86_400).default(30) }).default({ intervalSeconds: 30 });

/** An `http.json` target (`adapter: http.json`): a JSON resource behind a REST API. */
export const HttpJsonTargetConfig = z.strictObject({
  adapter: z.literal("http.json"),
  baseUrl: z.url({ protocol: /^https?$/, error: "baseUrl must be an http(s) URL such as http://127.0.0.1:4010" }),
  read: Credentials.default({ headers: {} }),
  /** Only the executor resolves this; the server drops it before it is ever validated. */
  write: Credentials.optional(),
  policy: PolicyOverride.optional(),
  /** What agents may propose here. Deny by default: without it, every plan for this target is refused. */
  allow: z
    .strictObject({
      ops: z.array(z.enum(["merge", "replace", "delete", "create"])).min(1),
      paths: z.array(z.string().regex(/^\//, "path patterns start with '/' (use * for one segment, ** for any)")).min(1),
      maxActions: z.int().positive().max(20).optional(),
      maxBodyBytes: z.int().positive().optional(),
    })
    .optional(),
  /**
   * How a change since the preview is detected: the target's ETag (If-Match on write), or, for
   * targets without one, a digest of the state read (checked by re-reading: weaker, as the target
   * itself cannot refuse a write that races the check).
   */
  precondition: z.enum(["etag", "digest"]).default("etag"),
  /** Milliseconds a preview read may take before it fails. */
  timeoutMs: z.int().positive().max(60_000).default(5_000),
  /**
   * Re-reading this target's resources while a plan on them is pending or approved:
   * a plan whose precondition no longer holds becomes stale before anyone approves it. At most
   * one read per resource per interval, whatever the plans and replicas; 0 turns it off.
   */
  watch: TargetWatch,
});
export type HttpJsonTargetConfig = z.infer<typeof HttpJsonTargetConfig>;
/** What the server holds of an http.json target: everything but the write credential. */
export type HttpJsonServerTarget = Omit<HttpJsonTargetConfig, "write">;
