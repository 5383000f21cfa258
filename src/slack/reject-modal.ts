import type { View } from "@slack/types";
import { MAX_REJECT_REASON_CHARS } from "../service/decide.ts";

/** The dialog a Reject click opens: a required reason, with the plan and hash carried along. */
export function rejectModal(meta: { planId: string; hash: string; channel: string }): View {
  return {
    type: "modal",
    callback_id: "reject",
    private_metadata: JSON.stringify(meta),
    title: { type: "plain_text", text: "Reject plan" },
    submit: { type: "plain_text", text: "Reject" },
    close: { type: "plain_text", text: "Cancel" },
    blocks: [
      {
        type: "input",
        block_id: "reason",
        label: { type: "plain_text", text: "Why are you rejecting it?" },
        hint: { type: "plain_text", text: "The agent and the requester see this." },
        element: { type: "plain_text_input", action_id: "reason", multiline: true, max_length: MAX_REJECT_REASON_CHARS },
      },
    ],
  };
}
