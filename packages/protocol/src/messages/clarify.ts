import { z } from "zod/v3";
import { boundedText, conversationEvent, OpaqueId, request, Timestamp } from "../common.js";
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
  expires_at: Timestamp.nullable()
    .optional()
    .describe("Only with the expiry feature: when the agent gives up on it; null when unknown"),
};

/** `clarify.request`: the agent asks the user a question. */
export const ClarifyRequest = conversationEvent(
  "clarify.request",
  clarifyFields,
  "The agent asks a question",
);

/** A pending clarification, as listed in `conversation.history.clarifications`. */
export const PendingClarification = z.object(clarifyFields).describe("A pending clarification");

/** An answer to a clarification: shared by `clarify.respond` and `POST /clarify/{clarify_id}`. */
const clarifyAnswerFields = {
  response: boundedText({ max: LIMITS.chatTextChars, nonBlank: true, tooLarge: true }),
};

/** `clarify.respond`: answer with a choice value or free text. */
export const ClarifyRespond = request(
  "clarify.respond",
  { clarify_id: OpaqueId, ...clarifyAnswerFields },
  "Answer a clarification with a choice or free text",
);

/** Body of `POST /clarify/{clarify_id}` (`push`): answer a question from a notification, as `clarify.respond` would. */
export const ClarifyAnswer = z.object(clarifyAnswerFields).describe("Body of POST /clarify/{clarify_id}");

/** `clarify.resolved`: broadcast once when a clarification is answered or withdrawn. */
export const ClarifyResolved = conversationEvent(
  "clarify.resolved",
  {
    clarify_id: z.string(),
    conversation_id: z
      .string()
      .optional()
      .describe("Only with the resume feature: the question's conversation"),
    accepted: z
      .boolean()
      .describe("true when the answer was delivered; false when the question was withdrawn"),
  },
  "A clarification was answered or withdrawn",
);

/** `200` body of `POST /clarify/{clarify_id}`: the fields of the `clarify.resolved` it broadcast. */
export const ClarifyAnswerResponse = z
  .object({
    clarify_id: z.string(),
    conversation_id: z.string(),
    accepted: z.literal(true).describe("Always true: the answer was delivered"),
  })
  .describe("Response of POST /clarify/{clarify_id}");

/** Parsed form of {@link PendingClarification}. */
export type PendingClarification = z.infer<typeof PendingClarification>;
