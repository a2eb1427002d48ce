// Compiled by test/package.test.ts against the *built* package through its
// own `exports` (self-reference), the way an integrator imports it.
import { ClientMessage, type ReplyOf, type ServerMessageOf } from "@pheby/protocol";

const parsed = ClientMessage.parse({ type: "ping" });
const kind: "ping" | string = parsed.type;
const reply: ReplyOf<"conversation.open"> = {
  type: "conversation.history",
  conversation_id: "c",
  messages: [],
  has_more: false,
  attachments: [],
  run: null,
  tools: [],
  approvals: [],
  clarifications: [],
};
const bad: ServerMessageOf<"run.finished"> = {
  type: "run.finished",
  conversation_id: "c",
  run_id: "r",
  // @ts-expect-error `run.finished.status` is a closed set.
  status: "done",
};

export { bad, kind, reply };
