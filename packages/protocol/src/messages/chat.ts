import { z } from "zod/v3";
import {
  boundedText,
  conversationEvent,
  Hex32Id,
  OpaqueId,
  request,
  Timestamp,
  uniqueArray,
} from "../common.js";
import { LIMITS, RUN_STATUSES } from "../constants.js";
import { ClientMessageId } from "./resume.js";

/** `chat.send`: start a run with a user message. */
export const ChatSend = request(
  "chat.send",
  {
    conversation_id: OpaqueId,
    text: boundedText({ max: LIMITS.chatTextChars, nonBlank: true, tooLarge: true }).describe(
      "Required, non-blank, at most 64,000 characters",
    ),
    attachment_ids: uniqueArray(Hex32Id, LIMITS.attachmentsPerSend)
      .optional()
      .describe("Up to 10 distinct inbound upload IDs of this conversation"),
    client_message_id: ClientMessageId.optional().describe(
      "Only with the resume feature: idempotency key, unique in the conversation; a repeat within 24 h gets the original outcome",
    ),
    queue: z
      .boolean()
      .optional()
      .describe(
        "Only with the queue feature: true queues the send while a run is active (run.queued) instead of run_active",
      ),
  },
  "Send a user message and start a run",
);

/** `run.cancel`: stop the active run. */
export const RunCancel = request(
  "run.cancel",
  { conversation_id: OpaqueId, run_id: OpaqueId },
  "Cancel the active run",
);

/** `run.accepted`: reply to `chat.send`. */
export const RunAccepted = conversationEvent(
  "run.accepted",
  { conversation_id: z.string(), run_id: z.string() },
  "A run was accepted",
);

/** `message.start`: an assistant message begins (always sent once a run is accepted). */
export const MessageStart = conversationEvent(
  "message.start",
  { conversation_id: z.string(), run_id: z.string(), message_id: z.string() },
  "An assistant message starts",
);

/**
 * `message.delta`: the cumulative draft text so far (replace, do not append).
 * On a connection that negotiated `delta.append` it carries `offset` and only
 * the text from `offset` on: apply it with {@link applyDelta}.
 */
export const MessageDelta = conversationEvent(
  "message.delta",
  {
    conversation_id: z.string(),
    message_id: z.string(),
    offset: z
      .number()
      .int()
      .nonnegative()
      .optional()
      .describe(
        "Only with the delta.append feature: draft = draft.slice(0, offset) + text (UTF-16 code units, never inside a surrogate pair)",
      ),
    text: z.string(),
    ts: Timestamp,
  },
  "Cumulative draft text (from offset on, with the delta.append feature)",
);

/** `message.complete`: the final text, superseding the draft. */
export const MessageComplete = conversationEvent(
  "message.complete",
  {
    conversation_id: z.string(),
    message_id: z.string(),
    text: z.string(),
    kind: z
      .literal("notice")
      .optional()
      .describe("notice: a lifecycle/status notice, not conversation content"),
    ts: Timestamp,
  },
  "Final message text",
);

/** `run.finished`: exactly one per run. */
export const RunFinished = conversationEvent(
  "run.finished",
  {
    conversation_id: z.string(),
    run_id: z.string(),
    status: z.enum(RUN_STATUSES),
    error: z.string().optional().describe("Only on failure"),
  },
  "A run ended",
);

/** The active run of a conversation, as listed in `conversation.history.run`. */
export const RunState = z
  .object({
    run_id: z.string(),
    conversation_id: z.string(),
    message_id: z.string().describe("The draft message being streamed"),
    status: z.literal("running"),
    text: z.string().describe("Cumulative draft text so far"),
    started_at: Timestamp,
  })
  .describe("The active run");

/** Parsed form of {@link RunState}. */
export type RunState = z.infer<typeof RunState>;
