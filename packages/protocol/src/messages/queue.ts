import { z } from "zod/v3";
import { conversationEvent } from "../common.js";
import { LIMITS } from "../constants.js";
import { ClientMessageId } from "./resume.js";

// The `queue` extension (FEATURE_QUEUE): follow-ups sent while a run is active wait their turn.

const position = z.number().int().min(1).max(LIMITS.queuedRunsPerConversation).describe("1 starts next");

/** One queued run, as listed in `queue.changed.queued` and `conversation.history.queue`. */
export const QueuedRun = z
  .object({
    run_id: z.string().describe("The run_id its run.accepted will carry when it starts"),
    text: z.string().describe("The queued user message"),
    position,
    client_message_id: ClientMessageId.optional().describe(
      "Only with the resume feature: the client_message_id the send carried",
    ),
  })
  .describe("A queued run");

/** `run.queued`: reply to `chat.send` with `queue: true` while a run is active. */
export const RunQueued = conversationEvent(
  "run.queued",
  { conversation_id: z.string(), run_id: z.string(), position },
  "A run was queued",
);

/** `queue.changed`: broadcast to `queue` connections whenever a conversation's queue changes. */
export const QueueChanged = conversationEvent(
  "queue.changed",
  {
    conversation_id: z.string(),
    queued: z
      .array(QueuedRun)
      .max(LIMITS.queuedRunsPerConversation)
      .describe("The whole queue, next first; empty when the last one started or was cancelled"),
  },
  "A conversation's queue changed",
);

/** Parsed form of {@link QueuedRun}. */
export type QueuedRun = z.infer<typeof QueuedRun>;
