import type { Json } from "./json.ts";

/**
 * Bidirectional controls reorder how text around them is drawn (Trojan Source): an agent could
 * make "refund 10 to alice" display as something else, or push a value past the end of its
 * label. Embeddings and overrides (U+202A–U+202E), isolates (U+2066–U+2069) and the implicit
 * marks (U+200E LRM, U+200F RLM, U+061C ALM) are all replaced by a visible marker such as
 * `⟨U+202E⟩`, so a reviewer sees that they are there and the text reads in its stored order.
 */
const BIDI_CONTROLS = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g;

export function neutralizeBidi(text: string): string {
  return text.replace(BIDI_CONTROLS, (c) => `⟨U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}⟩`);
}

/** Every string and key in a JSON value with its bidi controls made visible. */
export function neutralizeBidiJson<T extends Json>(value: T): T {
  if (typeof value === "string") return neutralizeBidi(value) as T;
  if (Array.isArray(value)) return value.map((v) => neutralizeBidiJson(v)) as T;
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [neutralizeBidi(k), neutralizeBidiJson(v)])) as T;
  }
  return value;
}
