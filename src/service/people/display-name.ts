import { neutralizeBidi } from "../../plan/bidi.ts";

/** Slack caps a display name at 80 characters; anything longer did not come from Slack's own form. */
export const MAX_DISPLAY_NAME_CHARS = 80;

/** What may be named through users.info: Slack user ids (U…, W…), not user groups (S…) or free text. */
export function isSlackUserId(id: string): boolean {
  return /^[UW][A-Z0-9]{2,20}$/.test(id);
}

/**
 * A display name as pages may show it: bidi controls made visible as in plan text, other control
 * characters dropped, runs of space folded, cut to Slack's length. Undefined when nothing is left.
 */
export function cleanDisplayName(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const text = neutralizeBidi(raw)
    .replace(/\p{Cc}/gu, " ")
    .replace(/\s+/gu, " ")
    .trim();
  if (text === "") return undefined;
  return [...text].slice(0, MAX_DISPLAY_NAME_CHARS).join("");
}
