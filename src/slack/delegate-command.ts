import type { ServiceContext } from "../service/context.ts";
import { createDelegation, endDelegation, listDelegations, type DelegationView } from "../service/delegation/index.ts";
import { ServiceError } from "../service/errors.ts";
import { escapeMrkdwn, mention, slackDate } from "./escape.ts";

/** What `/countersign delegate …` asks for. */
export type DelegateCommand =
  | { verb: "create"; delegate: string; until: string; targets?: string[] }
  | { verb: "list" }
  | { verb: "end"; id: string }
  | { verb: "help"; problem?: string };

export const DELEGATE_USAGE = [
  "*/countersign delegate @person until YYYY-MM-DD* — while you are away, @person decides in your place until the end of that day (your time zone)",
  "*/countersign delegate @person until YYYY-MM-DD target NAME…* — only for those targets",
  "*/countersign delegate list* — the delegations you gave or hold",
  "*/countersign delegate end ID* — end one early",
].join("\n");

/** A mention as Slack escapes it (`<@U024BE7LH|bob>`, `<@U024BE7LH>`), or a bare user id. */
const MENTION = /^<@([UW][A-Z0-9]{2,})(?:\|[^>]*)?>$/;
const USER_ID = /^[UW][A-Z0-9]{2,}$/;

/** Words, where an escaped mention or link (`<@U…|Bob Stone>`) is one word whatever spaces its name holds. */
const WORD = /<[^>]*>|[^\s<]+/g;

/**
 * The text of `/countersign delegate …` (`delegate` first), as the manifest's `should_escape: true`
 * sends it: a person is `<@U…|name>`. A name typed without Slack turning it into a mention (`@bob`
 * as text) cannot be told from anyone else's, so it is refused saying how to mention them.
 */
export function parseDelegateCommand(text: string): DelegateCommand {
  const [, first, ...rest] = text.match(WORD) ?? [];
  if (first === undefined || first === "help") return { verb: "help" };
  if (first === "list") return rest.length === 0 ? { verb: "list" } : { verb: "help", problem: "`delegate list` takes nothing after it" };
  if (first === "end") {
    if (rest.length !== 1) return { verb: "help", problem: "name the delegation to end: `delegate end ID` (`delegate list` shows the ids)" };
    return { verb: "end", id: rest[0]! };
  }
  const delegate = MENTION.exec(first)?.[1] ?? (USER_ID.test(first) ? first : undefined);
  if (!delegate)
    return {
      verb: "help",
      problem: `${first.startsWith("@") ? `"${first}" is not a mention Slack resolved` : `"${first}" is not a person`}: pick the person from the list Slack offers as you type @`,
    };
  const [untilWord, until, targetWord, ...targets] = rest;
  if (untilWord !== "until" || until === undefined) return { verb: "help", problem: "say until when: `delegate @person until YYYY-MM-DD`" };
  if (targetWord === undefined) return { verb: "create", delegate, until };
  if ((targetWord !== "target" && targetWord !== "targets") || targets.length === 0)
    return { verb: "help", problem: "after the date, only `target NAME…` may follow: the targets the delegation covers" };
  return { verb: "create", delegate, until, targets };
}

/** Runs `/countersign delegate …` for the person who typed it, and says what became of it, as mrkdwn. */
export async function answerDelegateCommand(ctx: ServiceContext, userId: string, text: string): Promise<string> {
  const command = parseDelegateCommand(text);
  const by = { userId, via: "slack" as const };
  try {
    switch (command.verb) {
      case "help":
        return (command.problem ? `That was not a delegation: ${escapeMrkdwn(command.problem)}.\n` : "") + DELEGATE_USAGE;
      case "list":
        return listed(userId, await listDelegations(ctx, { person: userId }));
      case "end": {
        const ended = await endDelegation(ctx, { id: command.id, by });
        return `Ended: ${mention(ended.delegate)} no longer decides for ${mention(ended.delegator)}.`;
      }
      case "create": {
        const made = await createDelegation(ctx, { delegator: userId, delegate: command.delegate, until: command.until, targets: command.targets, by });
        return `${mention(made.delegate)} decides in your place ${scope(made)} until ${slackDate(made.until)} (the end of ${escapeMrkdwn(command.until)}, ${escapeMrkdwn(made.timeZone)}): approve, reject, revoke and edit wherever you may. Reminders go to them. End it early with \`/countersign delegate end ${made.id}\`.`;
      }
    }
  } catch (err) {
    if (err instanceof ServiceError) return `Nothing changed: ${escapeMrkdwn(err.message)}`;
    throw err;
  }
}

function scope(d: DelegationView): string {
  return d.targets ? `on ${d.targets.map((t) => `\`${escapeMrkdwn(t)}\``).join(", ")}` : "on every target";
}

function listed(userId: string, delegations: readonly DelegationView[]): string {
  if (delegations.length === 0) return "You have given no delegation and hold none. " + "`/countersign delegate @person until YYYY-MM-DD` gives one.";
  return delegations
    .map((d) =>
      d.delegator === userId
        ? `• ${mention(d.delegate)} decides for you ${scope(d)} until ${slackDate(d.until)} — \`${d.id}\``
        : `• You decide for ${mention(d.delegator)} ${scope(d)} until ${slackDate(d.until)} — \`${d.id}\``,
    )
    .join("\n");
}
