/**
 * Text for Slack that shows agent-supplied strings literally: no mention fires, no link is
 * disguised, no formatting is smuggled in, and no text object outgrows Slack's limits.
 *
 * Three ways a string can reach Slack, from safest to least safe:
 * - `plainText()`: a `plain_text` object. Slack parses nothing in it (no mrkdwn, no `<…>`
 *   tokens; `emoji: false` keeps `:shortcodes:` literal). Prefer it for prose.
 * - `inlineCode()`: mrkdwn inside backticks. Slack applies no `*` `_` `~` formatting inside a
 *   code span, so paths and values keep those characters exactly; only `&`, `<`, `>` and the
 *   backtick (which would end the span) need treating.
 * - `escapeMrkdwn()`: mrkdwn outside code, where every formatting character must be defused.
 *
 * All lengths are UTF-16 code units, which is what Slack counts.
 */

import { neutralizeBidi } from "../plan/bidi.ts";

export const ELLIPSIS = "…";

/** Zero-width, no-break and invisible: keeps a `<` from starting a Slack token without showing anything. */
const WORD_JOINER = "\u2060";

/**
 * How formatting characters are defused outside code spans: each is replaced by a look-alike
 * that Slack's mrkdwn parser does not know.
 *
 * Why not insert an invisible character (zero-width space or joiner) around them? Slack has no
 * escape for `*` `_` `~` `` ` ``; whether a marker formats depends on its neighbours being word
 * boundaries, and Slack's parser treats zero-width characters as boundaries: jsx-slack's "exact
 * mode" inserts U+200B around markers precisely to *force* formatting in the middle of a word
 * (docs/about-escape-and-exact-mode.md). An invisible insertion can therefore turn formatting
 * on as easily as off, and may differ between Slack's web, desktop and mobile parsers. A
 * look-alike is not a marker on any client. The cost — a reader who copies the text gets the
 * look-alike — is why paths, values and versions go through `inlineCode()` instead, which keeps
 * them exact, and prose goes into `plain_text` wherever Block Kit allows it.
 *
 * The full-width forms are included because Slack treats them as markers too (jsx-slack
 * escapes them for that reason).
 */
const FORMATTING_LOOKALIKES: Readonly<Record<string, string>> = {
  "*": "\u2217", // ∗ ASTERISK OPERATOR
  "\uFF0A": "\uFE61", // ＊ → ﹡ SMALL ASTERISK
  _: "\u02CD", // ˍ MODIFIER LETTER LOW MACRON
  "\uFF3F": "\u2E0F", // ＿ → ⸏ PARAGRAPHOS
  "~": "\u223C", // ∼ TILDE OPERATOR
  "`": "\u02CB", // ˋ MODIFIER LETTER GRAVE ACCENT
  "\uFF40": "\u02CB", // ｀ → ˋ
};

const HTML_ENTITIES: Readonly<Record<string, string>> = { "&": "&amp;", "<": "&lt;", ">": "&gt;" };

const MRKDWN_SPECIAL = /[&<>*\uFF0A_\uFF3F~`\uFF40]/g;
const CODE_SPECIAL = /[&<>`\uFF40]/g;

/**
 * Characters a reviewer could not see but that change what a value means or how a line reads:
 * controls, bidirectional overrides and isolates (Trojan-Source style reordering), zero-width
 * spaces and joiners used to disguise an identifier, the BOM. Inside code they are shown as
 * `\uXXXX`. ZWJ (U+200D) stays: emoji sequences need it and it reorders nothing.
 */
// eslint-disable-next-line no-control-regex -- control characters are exactly what we look for
const INVISIBLE_IN_CODE = /[\u0000-\u001F\u007F-\u009F\u00AD\u061C\u200B\u200C\u200E\u200F\u2028-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]/g;

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

const LINE_BREAKS = /\r\n|[\n\r\u2028\u2029]/g;

/** Slack user ids (U…, or W… on Enterprise Grid), as the plan schema accepts them. */
const SLACK_USER_ID = /^[UW][A-Z0-9]{2,}$/;
/** Real ids are about 11 characters; a longer "id" is not one, and a mention cannot be truncated. */
const MAX_USER_ID = 32;

export const DEFAULT_DATE_FORMAT = "{date_short_pretty} at {time}";

export interface PlainText {
  type: "plain_text";
  text: string;
  emoji: false;
}

export interface Mrkdwn {
  type: "mrkdwn";
  text: string;
  /** Skips Slack's auto-linking of bare URLs, channel names and `@here`-style words. */
  verbatim: true;
}

/** Lone surrogates (possible in JSON input) replaced by U+FFFD, so truncation and Slack see well-formed UTF-16. */
export function wellFormed(text: string): string {
  return text.replace(LONE_SURROGATE, "\uFFFD");
}

/**
 * What every escape below starts from: well-formed, with bidi controls shown as markers. Plan
 * data already arrives neutralized through the reviewer view (plan-view.ts); this catches the
 * text that reaches Slack another way (audit-event reasons in thread replies, `/countersign list`).
 */
function shown(text: string): string {
  return neutralizeBidi(wellFormed(text));
}

/** Line breaks as spaces: for values shown on one line, where an agent could otherwise forge a second line. */
export function singleLine(text: string): string {
  return text.replace(LINE_BREAKS, " ");
}

/** Agent text for mrkdwn outside code: `&`, `<`, `>` as entities, formatting characters defused. */
export function escapeMrkdwn(text: string): string {
  return (
    shown(text)
      .replace(MRKDWN_SPECIAL, (c) => HTML_ENTITIES[c] ?? FORMATTING_LOOKALIKES[c] ?? c)
      // A line starting with `>` (escaped or full-width) is still a block quote; a soft hyphen in
      // front stops that (jsx-slack's tested workaround) and is invisible.
      .replace(/^(&gt;|\uFF1E)/gm, "\u00AD$1")
  );
}

/** Text for the inside of a code span: entities, invisible characters spelled out, backticks defused. */
export function escapeInCode(text: string): string {
  return shown(text)
    .replace(INVISIBLE_IN_CODE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)
    .replace(CODE_SPECIAL, (c) => HTML_ENTITIES[c] ?? FORMATTING_LOOKALIKES[c] ?? c);
}

/**
 * For `plain_text`: Slack parses no tokens there, but a word joiner after each `<` makes sure no
 * client ever could, and keeps our own output free of agent-made `<!…>`, `<@…>` and `<http…>`.
 */
export function defuseTokens(text: string): string {
  return shown(text).replaceAll("<", "<" + WORD_JOINER);
}

/** `text` as an inline code span of at most `max` (≥ 3) characters, backticks included. */
export function inlineCode(text: string, max: number): string {
  if (text === "") return truncate("_(empty)_", max);
  return "`" + truncateEscaped(text, max - 2, escapeInCode) + "`";
}

/** Escaped agent text for mrkdwn, at most `max` characters after escaping. */
export function mrkdwnText(text: string, max: number): string {
  return truncateEscaped(text, max, escapeMrkdwn);
}

/**
 * Executor text for mrkdwn, at most `max` characters after escaping, where each pair of
 * backticks is kept as an inline code span: the ids and values it quotes that way (a key id with
 * `_` in it) are shown exactly, and everything else as escapeMrkdwn shows it.
 */
export function mrkdwnWithCode(text: string, max: number): string {
  return truncateEscaped(text, max, escapeWithCodeSpans);
}

function escapeWithCodeSpans(text: string): string {
  const parts = text.split("`");
  // With an odd number of backticks the last one pairs with none, and is text.
  const unpaired = parts.length % 2 === 0;
  return parts
    .map((part, i) => {
      if (i % 2 === 0) return escapeMrkdwn(part);
      if (unpaired && i === parts.length - 1) return escapeMrkdwn("`" + part);
      return part === "" ? escapeMrkdwn("``") : "`" + escapeInCode(part) + "`";
    })
    .join("");
}

/** A `plain_text` object of at most `max` characters (Slack refuses empty ones). */
export function plainText(text: string, max: number): PlainText {
  if (text.trim() === "") return { type: "plain_text", text: truncate("(empty)", max), emoji: false };
  return { type: "plain_text", text: truncateEscaped(text, max, defuseTokens), emoji: false };
}

/**
 * A mrkdwn object for text already made safe. The cut is a last resort that callers' budgets
 * make unnecessary: if it ever happens a code span may read oddly, where an over-long text
 * would have cost the whole message.
 */
export function mrkdwn(text: string, max: number): Mrkdwn {
  return { type: "mrkdwn", text: truncate(text === "" ? " " : text, max), verbatim: true };
}

/** `text` cut to at most `max` (≥ 1) UTF-16 code units, with "…" when cut. */
export function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  return prefixWithin(text, max - ELLIPSIS.length) + ELLIPSIS;
}

/**
 * `escape(text)` cut to at most `max` code units, with "…" when cut. The cut happens before
 * escaping, so it never splits an entity, an escape sequence or a character. Relies on `escape`
 * never shrinking text, which holds for every escape here (each character maps to ≥ 1).
 */
export function truncateEscaped(text: string, max: number, escapeText: (text: string) => string): string {
  if (text.length <= max) {
    const whole = escapeText(text);
    if (whole.length <= max) return whole;
  }
  const room = max - ELLIPSIS.length;
  // The longest prefix whose escape fits: escaping never shrinks, so its length grows with the
  // prefix and a binary search over prefix lengths finds it.
  let fits = 0;
  let tooLong = Math.min(text.length, room) + 1;
  while (tooLong - fits > 1) {
    const middle = Math.floor((fits + tooLong) / 2);
    if (escapeText(prefixWithin(text, middle)).length <= room) fits = middle;
    else tooLong = middle;
  }
  return escapeText(prefixWithin(text, fits)) + ELLIPSIS;
}

const graphemes = new Intl.Segmenter("en", { granularity: "grapheme" });

/**
 * The longest prefix of at most `max` code units that ends between user-perceived characters,
 * so an emoji sequence or a letter with its accents is kept whole or dropped whole. One cluster
 * longer than the whole budget (a letter under thousands of combining marks) is cut between
 * code points instead — never inside a surrogate pair.
 */
export function prefixWithin(text: string, max: number): string {
  if (max <= 0) return "";
  if (text.length <= max) return text;
  // Whether there is a boundary at `max` depends only on what comes before it and the character
  // starting there, so segmenting a window is exact — and it keeps a 100 KB string cheap.
  const window = text.slice(0, max + 2);
  const straddling = graphemes.segment(window).containing(max);
  const end = straddling?.index ?? max;
  return end > 0 ? text.slice(0, end) : codePointPrefix(text, max);
}

function codePointPrefix(text: string, max: number): string {
  let end = 0;
  for (const char of text) {
    if (end + char.length > max) break;
    end += char.length;
  }
  return text.slice(0, end);
}

/**
 * A time every viewer sees in their own time zone. The fallback (for clients that cannot
 * localise) is the UTC ISO time. Input that is not a time is shown escaped, not dropped.
 */
export function slackDate(iso: string, format: string = DEFAULT_DATE_FORMAT): string {
  const ms = Date.parse(iso);
  if (!Number.isFinite(ms)) return mrkdwnText(singleLine(iso), 64);
  const unix = Math.floor(ms / 1000);
  const fallback = new Date(ms).toISOString().replace(/\.000Z$/, "Z");
  // `^`, `|` and `>` delimit the token; a format containing them would end it early.
  return `<!date^${unix}^${format.replace(/[\^|<>]/g, "")}|${fallback}>`;
}

export function isSlackUserId(userId: string): boolean {
  return userId.length <= MAX_USER_ID && SLACK_USER_ID.test(userId);
}

/**
 * `<@U…>` for a real user id. Anything else is shown as escaped text: an "id" like `<!channel>`
 * or `U1> <!here` must never become a token.
 */
export function mention(userId: string): string {
  return isSlackUserId(userId) ? `<@${userId}>` : mrkdwnText(singleLine(userId), 64);
}
