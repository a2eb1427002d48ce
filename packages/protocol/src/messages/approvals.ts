import { z } from "zod/v3";
import { boundedText, conversationEvent, OpaqueId, request, Timestamp } from "../common.js";
import { APPROVAL_CHOICES, LIMITS } from "../constants.js";
import { ToolContent } from "./activity.js";

const approvalFields = {
  approval_id: z.string(),
  session_key: z.string().describe("The agent-side session key of the conversation"),
  conversation_id: z.string(),
  run_id: z.string().nullable().describe("The run that is paused, or null outside a run"),
  command: z.string().describe("The action awaiting a decision"),
  description: z.string(),
  choices: z.array(z.enum(APPROVAL_CHOICES)).min(1).describe("Only the choices the agent can honour"),
  ts: Timestamp,
  expires_at: Timestamp.nullable()
    .optional()
    .describe("Only with the expiry feature: when the agent gives up on it (denies it); null when unknown"),
  tool_call_id: z
    .string()
    .optional()
    .describe("Only with the activity feature: the tool call the approval is about"),
  preview: ToolContent.optional().describe(
    "Only with the activity feature: that call's content blocks (an edit's diff, a command), or a plan's text",
  ),
};

/** `approval.request`: the agent pauses for a human decision. */
export const ApprovalRequest = conversationEvent(
  "approval.request",
  approvalFields,
  "The agent asks for approval",
);

/** A pending approval, as listed in `conversation.history.approvals`. */
export const PendingApproval = z.object(approvalFields).describe("A pending approval");

/** An answer to an approval: shared by `approval.respond` and `POST /approvals/{approval_id}`. */
const approvalAnswerFields = {
  choice: z.enum(APPROVAL_CHOICES),
  reason: boundedText({ max: LIMITS.shortTextChars }).optional().describe("Optional free text with deny"),
};

/** `approval.respond`: answer a pending approval. */
export const ApprovalRespond = request(
  "approval.respond",
  { approval_id: OpaqueId, ...approvalAnswerFields },
  "Answer a pending approval",
);

/** Body of `POST /approvals/{approval_id}` (`push`): answer an approval from a notification, as `approval.respond` would. */
export const ApprovalAnswer = z
  .object(approvalAnswerFields)
  .describe("Body of POST /approvals/{approval_id}");

/** `approval.resolved`: broadcast once when an approval is answered or withdrawn. */
export const ApprovalResolved = conversationEvent(
  "approval.resolved",
  {
    approval_id: z.string(),
    conversation_id: z
      .string()
      .optional()
      .describe("Only with the resume feature: the approval's conversation"),
    choice: z
      .enum(APPROVAL_CHOICES)
      .describe(
        'The choice applied; "deny" when the question was withdrawn (the agent fails it closed, accepted: false)',
      ),
    accepted: z
      .boolean()
      .describe("true when a client's response was applied; false when the question was withdrawn"),
  },
  "An approval was resolved or withdrawn",
);

/** `200` body of `POST /approvals/{approval_id}`: the fields of the `approval.resolved` it broadcast. */
export const ApprovalAnswerResponse = z
  .object({
    approval_id: z.string(),
    conversation_id: z.string(),
    choice: z.enum(APPROVAL_CHOICES),
    accepted: z.literal(true).describe("Always true: the answer was applied"),
  })
  .describe("Response of POST /approvals/{approval_id}");

/** Parsed form of {@link PendingApproval}. */
export type PendingApproval = z.infer<typeof PendingApproval>;
