import { z } from "zod/v3";
import { boundedText, event, Seq } from "../common.js";
import { LIMITS } from "../constants.js";

// The `resume` extension (FEATURE_RESUME): `seq` on conversation frames (see conversationEvent),
// replay of missed frames, and sends that are safe to retry.

/**
 * A client-chosen idempotency key (`resume`), 1 to 64 characters: a repeat within 24 hours gets the
 * original outcome instead of doing the work twice.
 */
export const ClientMessageId = boundedText({ max: LIMITS.clientMessageIdChars, nonBlank: true });

/**
 * `conversation.resumed`: reply to `conversation.open` with `since_seq` when every event after it is
 * still held. The missed frames follow, in their original order, then live events.
 */
export const ConversationResumed = event(
  "conversation.resumed",
  {
    conversation_id: z.string(),
    from_seq: Seq.describe("The since_seq asked for: replayed frames have a seq above it"),
    to_seq: Seq.describe("The seq of the last replayed frame (from_seq when nothing was missed)"),
  },
  "Missed frames follow",
);
