import type { View } from "@slack/types";
import { MAX_STATED_REASON_CHARS } from "../service/stated-reason.ts";

/** The dialog a Revoke click opens: a required reason, with the plan and hash carried along (as Reject's). */
export function revokeModal(meta: { planId: string; hash: string; channel: string }): View {
  return {
    type: "modal",
    callback_id: "revoke",
    private_metadata: JSON.stringify(meta),
    title: { type: "plain_text", text: "Revoke approval" },
    submit: { type: "plain_text", text: "Revoke" },
    close: { type: "plain_text", text: "Cancel" },
    blocks: [
      {
        type: "input",
        block_id: "reason",
        label: { type: "plain_text", text: "Why are you revoking it?" },
        hint: { type: "plain_text", text: "No executor will apply it. The agent and the approvers see this." },
        element: { type: "plain_text_input", action_id: "reason", multiline: true, max_length: MAX_STATED_REASON_CHARS },
      },
    ],
  };
}
