import { z } from "zod/v3";
import {
  boundedText,
  conversationEvent,
  event,
  OpaqueId,
  request,
  Seq,
  Timestamp,
  withFieldRules,
} from "../common.js";
import { LIMITS, MESSAGE_ROLES } from "../constants.js";
import { ContextUsage, PlanEntries } from "./activity.js";
import { PendingApproval } from "./approvals.js";
import { AttachmentDescriptor } from "./attachments.js";
import { RunState } from "./chat.js";
import { PendingClarification } from "./clarify.js";
import { optionalInboxFields } from "./inbox.js";
import { QueuedRun } from "./queue.js";
import { ClientMessageId } from "./resume.js";
import { HistoryThought } from "./thoughts.js";
import { ToolState } from "./tools.js";
import { optionalWorkspacesFields, workspacesCreateFields, workspacesListFilters } from "./workspaces.js";

const name = boundedText({ max: LIMITS.conversationNameChars, nonBlank: true });

/** One row of `conversation.snapshot`. */
export const ConversationSummary = z
  .object({
    conversation_id: z.string(),
    name: z.string(),
    session_id: z.string().nullable().describe("The agent's session ID, if any"),
    last_active: Timestamp.nullable(),
    source: z.string().describe("Which agent backend owns the session, e.g. simulator, acp"),
    ...optionalInboxFields,
    ...optionalWorkspacesFields,
  })
  .describe("A conversation");

/** One message of `conversation.history`. */
export const HistoryMessage = z
  .object({
    message_id: z.string(),
    role: z.enum(MESSAGE_ROLES),
    text: z.string(),
    ts: Timestamp.nullable(),
    client_message_id: ClientMessageId.optional().describe(
      "Only with the resume feature, on a user message: the client_message_id its chat.send carried",
    ),
  })
  .describe("A transcript message");

/** `conversation.list`. */
export const ConversationList = request(
  "conversation.list",
  {
    archived: z
      .boolean()
      .optional()
      .describe(
        "Only with the inbox feature: true lists archived conversations only; default: unarchived ones",
      ),
    ...workspacesListFilters,
  },
  "List conversations",
);

/** `conversation.snapshot`: reply to `conversation.list`. */
export const ConversationSnapshot = event(
  "conversation.snapshot",
  { conversations: z.array(ConversationSummary) },
  "All conversations",
);

/** `conversation.create`. */
export const ConversationCreate = request(
  "conversation.create",
  {
    name: name.optional(),
    client_message_id: ClientMessageId.optional().describe(
      "Only with the resume feature: idempotency key, unique on the server; a repeat within 24 h gets the same conversation",
    ),
    ...workspacesCreateFields,
  },
  "Create a conversation",
);

/** `conversation.created`: reply to `conversation.create`. */
export const ConversationCreated = conversationEvent(
  "conversation.created",
  { conversation_id: z.string(), name: z.string(), ...optionalInboxFields, ...optionalWorkspacesFields },
  "A conversation was created",
);

/** `conversation.updated`: broadcast when a conversation appears or its name changes. */
export const ConversationUpdated = conversationEvent(
  "conversation.updated",
  { conversation_id: z.string(), name: z.string(), ...optionalInboxFields, ...optionalWorkspacesFields },
  "A conversation appeared or changed",
);

/**
 * `conversation.open`: load a history page plus the recoverable snapshot, or (`resume`, with
 * `since_seq`) only what was missed. A cursor and `since_seq` do not go together.
 */
export const ConversationOpen = withFieldRules(
  request(
    "conversation.open",
    {
      conversation_id: OpaqueId,
      // No maximum: the spec caps a larger limit at 500 (the server does), it does not reject it.
      limit: z
        .number()
        .int()
        .min(1)
        .optional()
        .describe("Page size, at least 1; values over 500 are capped at 500; defaults to 200"),
      before_message_id: OpaqueId.optional().describe(
        "Exclusive cursor: the first message ID of the previous page",
      ),
      since_seq: Seq.optional().describe(
        "Only with the resume feature: the last seq this client has; replay what followed (conversation.resumed) or, when the server cannot, answer the snapshot with resumed: false",
      ),
    },
    "Open a conversation",
  ),
  [{ kind: "atMostOne", keys: ["before_message_id", "since_seq"] }],
);

/** `conversation.history`: reply to `conversation.open`. */
export const ConversationHistory = conversationEvent(
  "conversation.history",
  {
    conversation_id: z.string(),
    messages: z.array(HistoryMessage).describe("Newest page, in chronological order"),
    has_more: z.boolean(),
    attachments: z.array(AttachmentDescriptor).describe("Unexpired attachments"),
    run: RunState.nullable(),
    tools: z.array(ToolState).describe("Latest state of each tool call of the active or last run"),
    approvals: z.array(PendingApproval),
    clarifications: z.array(PendingClarification),
    resumed: z
      .literal(false)
      .optional()
      .describe(
        "Only with the resume feature, when since_seq was asked for and cannot be replayed: replace local state",
      ),
    queue: z
      .array(QueuedRun)
      .max(LIMITS.queuedRunsPerConversation)
      .optional()
      .describe("Only with the queue feature: the queued runs, next first"),
    plan: PlanEntries.nullable()
      .optional()
      .describe("Only with the activity feature: the agent's latest plan, or null when it has none"),
    usage: ContextUsage.nullable()
      .optional()
      .describe("Only with the activity feature: the agent's latest context usage, or null"),
    thoughts: z
      .array(HistoryThought)
      .optional()
      .describe(
        "Only with the thoughts feature: the active run's thoughts so far, oldest first ([] without an active run)",
      ),
    mode_id: z
      .string()
      .nullable()
      .optional()
      .describe("Only with the modes feature: the conversation's current mode, or null when none is known"),
  },
  "History page and recoverable state",
);

/** `conversation.rename`. */
export const ConversationRename = request(
  "conversation.rename",
  { conversation_id: OpaqueId, name },
  "Rename a conversation",
);

/** `conversation.renamed`: reply (with request_id) and broadcast (without). */
export const ConversationRenamed = conversationEvent(
  "conversation.renamed",
  { conversation_id: z.string(), name: z.string() },
  "A conversation was renamed",
);

/** `conversation.delete`. */
export const ConversationDelete = request(
  "conversation.delete",
  { conversation_id: OpaqueId },
  "Delete a conversation",
);

/** `conversation.deleted`: reply (with request_id) and broadcast (without). */
export const ConversationDeleted = conversationEvent(
  "conversation.deleted",
  { conversation_id: z.string() },
  "A conversation was deleted",
);

/** Parsed form of {@link ConversationSummary}. */
export type ConversationSummary = z.infer<typeof ConversationSummary>;
/** Parsed form of {@link HistoryMessage}. */
export type HistoryMessage = z.infer<typeof HistoryMessage>;
