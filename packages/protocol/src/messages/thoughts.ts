import { z } from "zod/v3";
import { boundedText, conversationEvent, Timestamp } from "../common.js";
import { LIMITS } from "../constants.js";

// The `thoughts` extension (FEATURE_THOUGHTS): the agent's thinking, streamed beside its answer.

/** A thought's text: at most 64,000 characters (the server stores and sends no more of one thought). */
const ThoughtText = boundedText({ max: LIMITS.thoughtChars });

/**
 * `thought.delta`: the agent's thinking so far, with `delta.append`'s rules whatever else the
 * connection enabled: `thought = thought.slice(0, offset) + text` ({@link applyDelta}), the first
 * delta of a thought a connection receives (live, mid-stream or replayed) has offset 0 and the whole text.
 */
export const ThoughtDelta = conversationEvent(
  "thought.delta",
  {
    conversation_id: z.string(),
    run_id: z.string(),
    thought_id: z
      .string()
      .describe("One thought: the stretch of thinking before the agent answers or calls a tool"),
    offset: z
      .number()
      .int()
      .nonnegative()
      .describe(
        "thought = thought.slice(0, offset) + text (UTF-16 code units, never inside a surrogate pair); 0 with the whole text on a connection's first delta of the thought",
      ),
    text: ThoughtText.describe("The thought's text from offset on"),
    ts: Timestamp,
  },
  "The agent's thinking so far (append delta)",
);

/** `thought.complete`: the thought's whole text; the agent moved on (answer, tool call, end of turn). */
export const ThoughtComplete = conversationEvent(
  "thought.complete",
  {
    conversation_id: z.string(),
    run_id: z.string(),
    thought_id: z.string(),
    text: ThoughtText.describe("The whole thought, superseding the deltas"),
    ts: Timestamp,
  },
  "A thought ended",
);

/** One thought of the active run, as listed in `conversation.history.thoughts`. */
export const HistoryThought = z
  .object({
    thought_id: z.string(),
    run_id: z.string(),
    text: ThoughtText.describe("The thought so far (the whole thought once complete)"),
    complete: z.boolean().describe("false: still streaming; later thought.delta frames continue text"),
  })
  .describe("A thought of the active run");

/** Parsed form of {@link HistoryThought}. */
export type HistoryThought = z.infer<typeof HistoryThought>;
