import { describe, expect, it } from "vitest";
import {
  escapeInCode,
  escapeMrkdwn,
  inlineCode,
  isSlackUserId,
  mention,
  mrkdwnText,
  mrkdwnWithCode,
  plainText,
  prefixWithin,
  singleLine,
  slackDate,
  truncate,
  truncateEscaped,
} from "../../../src/slack/escape.ts";

const WJ = "\u2060";
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

describe("escapeMrkdwn", () => {
  it.each<[string, string, string]>([
    ["plain text is unchanged", "Rename contact 42", "Rename contact 42"],
    ["& < > become entities", "a & b < c > d", "a &amp; b &lt; c &gt; d"],
    ["an entity in the input shows literally", "&amp;", "&amp;amp;"],
    ["<!channel> cannot mention", "<!channel>", "&lt;!channel&gt;"],
    ["<!here> cannot mention", "<!here>", "&lt;!here&gt;"],
    ["<@U123> cannot mention", "<@U123>", "&lt;@U123&gt;"],
    ["<!subteam^S123> cannot mention", "<!subteam^S123>", "&lt;!subteam^S123&gt;"],
    ["a disguised link stays text", "<https://evil|prod>", "&lt;https://evil|prod&gt;"],
    ["bold is defused", "*bold*", "\u2217bold\u2217"],
    ["italic is defused", "_x_", "\u02CDx\u02CD"],
    ["strike is defused", "~x~", "\u223Cx\u223C"],
    ["inline code is defused", "`x`", "\u02CBx\u02CB"],
    ["a code block is defused", "```x```", "\u02CB\u02CB\u02CBx\u02CB\u02CB\u02CB"],
    ["full-width markers are defused", "\uFF0Ab\uFF0A \uFF3Fi\uFF3F \uFF40c\uFF40", "\uFE61b\uFE61 \u2E0Fi\u2E0F \u02CBc\u02CB"],
    ["a leading > cannot quote", "> quoted", "\u00AD&gt; quoted"],
    ["a > on a later line cannot quote", "ok\n> quoted", "ok\n\u00AD&gt; quoted"],
    ["a > inside a line is only escaped", "a > b", "a &gt; b"],
    ["a lone surrogate becomes U+FFFD", "a\uD800b", "a\uFFFDb"],
    ["emoji, RTL and combining marks pass through", "👩‍💻 שלום e\u0301", "👩‍💻 שלום e\u0301"],
  ])("%s", (_name, input, expected) => {
    expect(escapeMrkdwn(input)).toBe(expected);
  });

  it("leaves no formatting character and no raw angle bracket, whatever the input", () => {
    const hostile = "<!channel> <!here> <@U123> <!subteam^S123> <https://evil|prod> *bold* _x_ ~x~ `c` ```b``` &amp;";
    const out = escapeMrkdwn(hostile);
    expect(out).not.toMatch(/[<>*_~`]/);
    expect(out).not.toMatch(/&(?!amp;|lt;|gt;)/);
  });
});

describe("escapeInCode", () => {
  it.each<[string, string, string]>([
    ["*, _ and ~ stay exact inside code", "/users/john_doe/*~x~", "/users/john_doe/*~x~"],
    ["a backtick cannot end the span", "a`b", "a\u02CBb"],
    ["& < > become entities", "<@U123>&", "&lt;@U123&gt;&amp;"],
    ["a newline is spelled out", "a\nb", "a\\u000ab"],
    ["a right-to-left override is shown as a marker", "abc\u202Efed", "abc⟨U+202E⟩fed"],
    ["a zero-width space is spelled out", "ad\u200Bmin", "ad\\u200bmin"],
    ["an emoji ZWJ sequence stays whole", "👩‍💻", "👩‍💻"],
  ])("%s", (_name, input, expected) => {
    expect(escapeInCode(input)).toBe(expected);
  });
});

describe("mrkdwnWithCode", () => {
  it.each<[string, string, string]>([
    ["a key id in backticks is a code span, its _ kept", "unknown key `ab_cd_ef`", "unknown key `ab_cd_ef`"],
    ["outside the span, formatting is defused", "_x_ `a_b` *y*", "\u02CDx\u02CD `a_b` \u2217y\u2217"],
    ["inside the span, & < > are entities", "`<!channel>&`", "`&lt;!channel&gt;&amp;`"],
    ["an unpaired backtick stays text", "a `b_c` d ` e_f", "a `b_c` d \u02CB e\u02CDf"],
    ["an empty pair is text", "a `` b", "a \u02CB\u02CB b"],
    ["a code block's fence is not a block", "```x_y```", "\u02CB\u02CB`x_y`\u02CB\u02CB"],
  ])("%s", (_name, input, expected) => {
    expect(mrkdwnWithCode(input, 3000)).toBe(expected);
  });

  it("is cut to the budget, never leaving a span open", () => {
    const text = `grant signed with unknown key \`${"k_".repeat(40)}\` and more`;
    for (const max of [10, 35, 60, 200]) {
      const out = mrkdwnWithCode(text, max);
      expect(out.length).toBeLessThanOrEqual(max);
      expect((out.match(/`/g) ?? []).length % 2).toBe(0);
    }
  });
});

describe("inlineCode", () => {
  it.each<[string, string, number, string]>([
    ["wraps in backticks", "/a/b", 50, "`/a/b`"],
    ["neutralises a backtick inside", "/a`b", 50, "`/a\u02CBb`"],
    ["an empty value is said, not an empty span", "", 50, "_(empty)_"],
    ["cuts inside the span, keeping both backticks", "abcdefghij", 8, "`abcde…`"],
    ["never cuts an entity", "&&&&", 8, "`&amp;…`"],
  ])("%s", (_name, input, max, expected) => {
    const out = inlineCode(input, max);
    expect(out).toBe(expected);
    expect(out.length).toBeLessThanOrEqual(max);
  });
});

describe("plainText", () => {
  it.each<[string, string, number, string]>([
    ["keeps text exactly", "*bold* _x_ ~x~ `c` &amp;", 100, "*bold* _x_ ~x~ `c` &amp;"],
    ["defuses a token start with an invisible word joiner", "<!channel>", 100, `<${WJ}!channel>`],
    ["defuses a disguised link", "<https://evil|prod>", 100, `<${WJ}https://evil|prod>`],
    ["says (empty) for nothing, which Slack would refuse", "", 10, "(empty)"],
    ["says (empty) for only spaces", "   ", 10, "(empty)"],
    ["truncates with an ellipsis", "abcdefghij", 5, "abcd…"],
  ])("%s", (_name, input, max, expected) => {
    expect(plainText(input, max)).toEqual({ type: "plain_text", text: expected, emoji: false });
  });
});

describe("truncate", () => {
  it.each<[string, string, number, string]>([
    ["short text is unchanged", "abc", 3, "abc"],
    ["long text ends in …", "abcdef", 4, "abc…"],
    ["never splits a surrogate pair", "ab😀cd", 4, "ab…"],
    ["keeps an emoji ZWJ sequence whole or drops it", "x👩‍💻y", 5, "x…"],
    ["keeps a letter with its accent", "e\u0301e\u0301e\u0301", 4, "e\u0301…"],
    ["keeps a flag (two regional indicators) whole", "🇫🇷🇩🇪", 5, "🇫🇷…"],
    ["cuts one oversized cluster between code points", "a" + "\u0301".repeat(50), 4, "a\u0301\u0301…"],
    ["cuts an oversized emoji cluster without splitting a pair", "👩‍👩‍👧‍👦", 4, "👩\u200D…"],
  ])("%s", (_name, input, max, expected) => {
    const out = truncate(input, max);
    expect(out).toBe(expected);
    expect(out.length).toBeLessThanOrEqual(max);
  });

  it("stays within the limit and well-formed for any mix of tricky characters", () => {
    const pool = ["a", "é", "e\u0301", "😀", "👩‍💻", "🇫🇷", "\u0301", "ש", "\u202E", "&", "<", "`", "*", "\uD800", "👍🏽", " "];
    let seed = 42;
    const next = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    for (let round = 0; round < 500; round++) {
      const text = Array.from({ length: next(60) }, () => pool[next(pool.length)]).join("");
      const max = 1 + next(40);
      for (const out of [truncate(text, max), mrkdwnText(text, max), plainText(text, max).text, inlineCode(text, max + 2)]) {
        expect(out.length).toBeLessThanOrEqual(max + 2);
        if (!LONE_SURROGATE.test(text)) expect(out).not.toMatch(LONE_SURROGATE);
      }
      expect(truncate(text, max).length).toBeLessThanOrEqual(max);
      expect(mrkdwnText(text, max).length).toBeLessThanOrEqual(max);
      expect(mrkdwnText(text, max)).not.toMatch(LONE_SURROGATE);
    }
  });

  it("handles 100 KB quickly", () => {
    const big = "x".repeat(100_000) + "👩‍💻";
    const started = performance.now();
    for (let i = 0; i < 200; i++) truncate(big, 3000);
    expect(performance.now() - started).toBeLessThan(1000);
  });
});

describe("truncateEscaped", () => {
  it("counts the escaped length, not the input length", () => {
    const out = truncateEscaped("&".repeat(100), 20, escapeMrkdwn);
    expect(out).toBe("&amp;".repeat(3) + "…");
    expect(out.length).toBeLessThanOrEqual(20);
  });

  it("returns the whole escape when it fits", () => {
    expect(truncateEscaped("<b>", 20, escapeMrkdwn)).toBe("&lt;b&gt;");
  });

  it("gives up to an ellipsis when not even one character fits", () => {
    expect(truncateEscaped("&", 3, escapeMrkdwn)).toBe("…");
  });
});

describe("prefixWithin", () => {
  it.each<[string, number, string]>([
    ["abc", 0, ""],
    ["abc", 5, "abc"],
    ["ab😀", 3, "ab"],
    ["😀😀", 2, "😀"],
  ])("prefixWithin(%j, %i) = %j", (text, max, expected) => {
    expect(prefixWithin(text, max)).toBe(expected);
  });
});

describe("singleLine", () => {
  it("turns every kind of line break into a space", () => {
    expect(singleLine("a\nb\r\nc\rd\u2028e\u2029f")).toBe("a b c d e f");
  });
});

describe("slackDate", () => {
  it.each<[string, string | undefined, string]>([
    ["2026-05-01T12:00:00Z", undefined, "<!date^1777636800^{date_short_pretty} at {time}|2026-05-01T12:00:00Z>"],
    ["2026-05-01T12:00:00.250Z", undefined, "<!date^1777636800^{date_short_pretty} at {time}|2026-05-01T12:00:00.250Z>"],
    ["2026-05-01T14:00:00+02:00", "{date_num}", "<!date^1777636800^{date_num}|2026-05-01T12:00:00Z>"],
    ["2026-05-01T12:00:00Z", "{date}|x>y^z", "<!date^1777636800^{date}xyz|2026-05-01T12:00:00Z>"],
  ])("slackDate(%j, %j)", (iso, format, expected) => {
    expect(slackDate(iso, format)).toBe(expected);
  });

  it("shows a non-date escaped rather than making a token of it", () => {
    expect(slackDate("<!channel>")).toBe("&lt;!channel&gt;");
  });
});

describe("mention", () => {
  it.each<[string, string]>([
    ["U024BE7LH", "<@U024BE7LH>"],
    ["W0123ABC", "<@W0123ABC>"],
    ["UAB", "<@UAB>"],
    ["U1", "U1"],
    ["u024be7lh", "u024be7lh"],
    ["<!channel>", "&lt;!channel&gt;"],
    ["U123> <!here", "U123&gt; &lt;!here"],
    ["*boss*", "\u2217boss\u2217"],
    ["U123\n<!here>", "U123 &lt;!here&gt;"],
  ])("mention(%j) = %j", (userId, expected) => {
    expect(mention(userId)).toBe(expected);
  });

  it("does not make a mention of an id too long to be one", () => {
    const long = "U" + "A".repeat(100);
    expect(isSlackUserId(long)).toBe(false);
    expect(mention(long).startsWith("<")).toBe(false);
    expect(mention(long).length).toBeLessThanOrEqual(64);
  });
});
