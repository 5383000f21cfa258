import type { View } from "@slack/types";
import { MAX_STATED_REASON_CHARS } from "../service/access/index.ts";

/** What a plan's reason dialog carries to its submission: the plan and exact hash clicked, and where. */
export interface ReasonModalMeta {
  planId: string;
  hash: string;
  channel: string;
}

/**
 * The dialog a Reject or Revoke click opens: one required reason (block and action id `reason`,
 * read back by the listeners' reasonSubmitted), bounded as the service bounds every reason.
 */
function reasonModal(meta: ReasonModalMeta, words: { callbackId: "reject" | "revoke"; title: string; submit: string; label: string; hint: string }): View {
  return {
    type: "modal",
    callback_id: words.callbackId,
    private_metadata: JSON.stringify(meta),
    title: { type: "plain_text", text: words.title },
    submit: { type: "plain_text", text: words.submit },
    close: { type: "plain_text", text: "Cancel" },
    blocks: [
      {
        type: "input",
        block_id: "reason",
        label: { type: "plain_text", text: words.label },
        hint: { type: "plain_text", text: words.hint },
        element: { type: "plain_text_input", action_id: "reason", multiline: true, max_length: MAX_STATED_REASON_CHARS },
      },
    ],
  };
}

export const rejectModal = (meta: ReasonModalMeta): View =>
  reasonModal(meta, {
    callbackId: "reject",
    title: "Reject plan",
    submit: "Reject",
    label: "Why are you rejecting it?",
    hint: "The agent and the requester see this.",
  });

export const revokeModal = (meta: ReasonModalMeta): View =>
  reasonModal(meta, {
    callbackId: "revoke",
    title: "Revoke approval",
    submit: "Revoke",
    label: "Why are you revoking it?",
    hint: "No executor will apply it. The agent and the approvers see this.",
  });
