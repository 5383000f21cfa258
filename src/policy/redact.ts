import type { Change } from "../plan/changes.ts";
import type { Json } from "../plan/json.ts";
import type { PlannedAction } from "../plan/schema.ts";

/** What a masked value shows instead. The diff still lists the field, so a reviewer sees that it changes. */
export const MASK = "•••••• (secret)";

/** Field names that hold secrets, compared without case, '_' or '-' ("api_key" matches "apiKey", "X-Api-Key"). */
export const DEFAULT_SECRET_FIELDS = [
  "password",
  "passwd",
  "passphrase",
  "secret",
  "token",
  "authorization",
  "apikey",
  "privatekey",
  "accesskey",
  "credential",
  "cookie",
  "sessionid",
  "pin",
  "ssn",
] as const;

/** Values that are credentials whatever field they sit in. */
const CREDENTIAL_PATTERNS: RegExp[] = [
  /xox[abposr]-[A-Za-z0-9-]{10,}/g, // Slack tokens
  /xapp-\d-[A-Za-z0-9-]{10,}/g, // Slack app tokens
  /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g, // AWS access key ids
  /\bgh[pousr]_[A-Za-z0-9]{30,}\b/g, // GitHub tokens
  /\bgithub_pat_[A-Za-z0-9_]{30,}\b/g,
  /\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}\b/g, // OpenAI / Anthropic style keys
  /\b(?:sk|rk)_live_[A-Za-z0-9]{16,}\b/g, // Stripe
  /\bAIza[0-9A-Za-z_-]{35}\b/g, // Google API keys
  /\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\b/g, // JWTs
  /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)/g, // PEM private keys
  /\bcsk_[A-Za-z0-9_-]{40,}\b/g, // Countersign agent keys
];

export interface RedactionRules {
  /** Normalized field names (see normalize). */
  fields: readonly string[];
}

export function redactionRules(extraFields: readonly string[] = []): RedactionRules {
  return { fields: [...DEFAULT_SECRET_FIELDS, ...extraFields].map(normalize) };
}

const normalize = (name: string) => name.toLowerCase().replace(/[^a-z0-9]/g, "");

export function isSecretField(name: string, rules: RedactionRules): boolean {
  const n = normalize(name);
  return n.length > 0 && rules.fields.some((f) => n.includes(f));
}

/** Masks every credential-looking run inside a string (error messages, target answers). */
export function redactText(text: string): string {
  return CREDENTIAL_PATTERNS.reduce((t, pattern) => t.replace(pattern, MASK), text);
}

/** A copy of a JSON value with secret fields and credential-looking strings masked. */
export function redactJson(value: Json, rules: RedactionRules): Json {
  if (typeof value === "string") return redactText(value);
  if (Array.isArray(value)) return value.map((v) => redactJson(v, rules));
  if (value !== null && typeof value === "object") {
    const out: { [key: string]: Json } = {};
    for (const [k, v] of Object.entries(value)) {
      Object.defineProperty(out, k, {
        value: isSecretField(k, rules) && v !== null ? MASK : redactJson(v, rules),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  }
  return value;
}

/** A change with its values masked when the field (any segment of its path) is secret or the values look like credentials. */
export function redactChange(change: Change, rules: RedactionRules): Change {
  const secret = change.path.split("/").some((segment) => isSecretField(segment.replaceAll("~1", "/").replaceAll("~0", "~"), rules));
  const mask = (v: Json | undefined) => (v === undefined ? undefined : secret && v !== null ? MASK : redactJson(v, rules));
  const out: Change = { path: change.path };
  const from = mask(change.from);
  const to = mask(change.to);
  if (from !== undefined) out.from = from;
  if (to !== undefined) out.to = to;
  return out;
}

/**
 * A planned action with what an agent wrote into it masked, for reviewers: an http.json body,
 * a postgres.row row's values (by column name, as fields are). Path, key and precondition stay:
 * they say where, not what.
 */
export const redactPlanned =
  (rules: RedactionRules) =>
  (action: PlannedAction): PlannedAction => {
    if (action.kind === "http.json") return action.body === undefined ? action : { ...action, body: redactJson(action.body, rules) };
    return action.values === undefined ? action : { ...action, values: redactJson(action.values, rules) as Record<string, Json> };
  };

/**
 * Whether reviewers see the value at this JSON Pointer masked: a secret field anywhere on its
 * path (whatever it holds, null included), or a value that looks like a credential.
 */
export function isMaskedValue(pointer: string, value: Json, rules: RedactionRules): boolean {
  const secret = pointer
    .split("/")
    .slice(1)
    .some((segment) => isSecretField(segment.replaceAll("~1", "/").replaceAll("~0", "~"), rules));
  return secret || JSON.stringify(redactJson(value, rules)) !== JSON.stringify(value);
}
