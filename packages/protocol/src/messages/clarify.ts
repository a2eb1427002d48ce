import { z } from "zod/v3";
import { boundedText, event, OpaqueId, request, Timestamp } from "../common.js";
import { LIMITS } from "../constants.js";

const clarifyFields = {
  clarify_id: z.string(),
  session_key: z.string(),
  conversation_id: z.string(),
  run_id: z.string().nullable(),
  question: z.string(),
  choices: z.array(z.string()).nullable().describe("null means free text only"),
  allow_free_text: z.boolean(),
  ts: Timestamp,
};

/** `clarify.request`: the agent asks the user a question. */
export const ClarifyRequest = event("clarify.request", clarifyFields, "The agent asks a question");

/** A pending clarification, as listed in `conversation.history.clarifications`. */
export const PendingClarification = z.object(clarifyFields).describe("A pending clarification");

/** `clarify.respond`: answer with a choice value or free text. */
export const ClarifyRespond = request(
  "clarify.respond",
  {
    clarify_id: OpaqueId,
    response: boundedText({ max: LIMITS.chatTextChars, nonBlank: true, tooLarge: true }),
  },
  "Answer a clarification with a choice or free text",
);

/** `clarify.resolved`: broadcast once when a clarification is answered or withdrawn. */
export const ClarifyResolved = event(
  "clarify.resolved",
  {
    clarify_id: z.string(),
    accepted: z
      .boolean()
      .describe("true when the answer was delivered; false when the question was withdrawn"),
  },
  "A clarification was answered or withdrawn",
);

/** Parsed form of {@link PendingClarification}. */
export type PendingClarification = z.infer<typeof PendingClarification>;
