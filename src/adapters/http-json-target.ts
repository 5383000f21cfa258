import { z } from "zod";
import { PolicyOverride } from "../policy/policy-config.ts";

const Headers = z.record(z.string().min(1), z.string());
/** Headers for one side, reading or writing; `variable` names the token in the page's example. */
const credentials = (variable: string) =>
  z.strictObject({
    headers: Headers.default({}).meta({
      description: "Headers sent with each request, by name; `${VAR}` reads the environment.",
      examples: [{ Authorization: `Bearer \${${variable}}` }],
    }),
  });

/** What agents may propose on a target: `watch`, the re-reads of open plans' targets, is the server's for every kind. */
export const TargetWatch = z
  .strictObject({
    intervalSeconds: z
      .int()
      .min(0)
      .max(86_400)
      .default(30)
      .meta({
        description: "Seconds between re-reads of a resource while a plan on it is open; 0 turns the watch off (an Approve still re-reads).",
        examples: [30],
      }),
  })
  .default({ intervalSeconds: 30 })
  .describe(
    "While a plan on this target is pending or approved, the server re-reads its resources (read credential), at most once per resource per interval whatever the plans and replicas; one that changed makes the plan stale before anyone approves it.",
  );

/** An `http.json` target (`adapter: http.json`): a JSON resource behind a REST API. */
export const HttpJsonTargetConfig = z
  .strictObject({
    adapter: z.literal("http.json").describe("The kind of target: a JSON resource behind a REST API."),
    baseUrl: z.url({ protocol: /^https?$/, error: "baseUrl must be an http(s) URL such as http://127.0.0.1:4010" }).meta({
      description: "Action paths are relative to this; they can never leave it (no `..`, no other host).",
      examples: ["https://crm.internal.example/api"],
    }),
    read: credentials("CRM_READ_TOKEN")
      .default({ headers: {} })
      .describe("The credential for reading (previews, re-checks, the watch): the server's only one for this target."),
    write: credentials("CRM_WRITE_TOKEN")
      .optional()
      .describe(
        "The credential for writing. Only the executor resolves this; the server drops it before it is ever validated, and the executor refuses to start without it.",
      ),
    policy: PolicyOverride.optional().describe("Overrides of `defaults` for this target; a key left out comes from `defaults`."),
    allow: z
      .strictObject({
        ops: z
          .array(z.enum(["merge", "replace", "delete", "create"]))
          .min(1)
          .meta({ description: "The ops agents may propose here.", examples: [["merge", "create"]] }),
        paths: z
          .array(z.string().regex(/^\//, "path patterns start with '/' (use * for one segment, ** for any)"))
          .min(1)
          .meta({ description: "The paths agents may propose changes to: `*` is one path segment, `**` any number of them.", examples: [["/contacts/*"]] }),
        maxActions: z
          .int()
          .positive()
          .max(20)
          .optional()
          .meta({ description: "Actions on this target in one plan.", examples: [5] }),
        maxBodyBytes: z
          .int()
          .positive()
          .optional()
          .meta({ description: "Bytes of one action's JSON body.", examples: [8192] }),
      })
      .optional()
      .describe("What agents may propose here. Deny by default: without it, every plan for this target is refused (422 policy_denied)."),
    precondition: z
      .enum(["etag", "digest"])
      .default("etag")
      .meta({
        description:
          "How a change since the preview is detected: the target's ETag (sent back as If-Match on write), or, for targets without one, a digest of the state read, checked by re-reading: weaker, as the target itself cannot refuse a write that races the check.",
        examples: ["digest"],
      }),
    timeoutMs: z
      .int()
      .positive()
      .max(60_000)
      .default(5_000)
      .meta({ description: "Milliseconds a preview read may take before it fails.", examples: [5000] }),
    watch: TargetWatch,
  })
  .describe("A JSON resource behind a REST API that gives ETags (or, with `precondition: digest`, one that does not).");
export type HttpJsonTargetConfig = z.infer<typeof HttpJsonTargetConfig>;
/** What the server holds of an http.json target: everything but the write credential. */
export type HttpJsonServerTarget = Omit<HttpJsonTargetConfig, "write">;
