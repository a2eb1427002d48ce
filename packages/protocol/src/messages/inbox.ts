import { z } from "zod/v3";
import { boundedText, event, OpaqueId, request, Timestamp } from "../common.js";
import { CONVERSATION_STATUSES, LIMITS, MESSAGE_ROLES } from "../constants.js";

// The `inbox` extension (FEATURE_INBOX): the conversation list as an inbox (status, pending questions,
// unread counts per reader, a preview, archive) and full-text search over every message.

/** `inbox`: the last message of a conversation, shortened for a list row. */
export const ConversationPreview = z
  .object({
    role: z.enum(MESSAGE_ROLES),
    text: boundedText({ max: LIMITS.inboxPreviewChars }).describe(
      "The message's text, shortened to at most 200 characters",
    ),
    ts: Timestamp.nullable(),
  })
  .describe("The last message of a conversation, shortened");

/** What an `inbox` connection knows of a conversation besides its name: the list row's state. */
export const inboxFields = {
  status: z
    .enum(CONVERSATION_STATUSES)
    .describe(
      "waiting: an approval or question is pending; running; failed: the last run failed (until the next starts); idle",
    ),
  pending: z.number().int().nonnegative().describe("How many approvals and questions wait for an answer"),
  unread: z
    .number()
    .int()
    .nonnegative()
    .describe("Assistant messages completed after this reader last read the conversation"),
  preview: ConversationPreview.nullable().describe("The last message, or null when there is none"),
  archived: z.boolean().describe("Archived (one state for every reader)"),
};

/** The {@link inboxFields} as optional fields: present only on `inbox` connections. */
export const optionalInboxFields = {
  status: inboxFields.status
    .optional()
    .describe(`Only with the inbox feature: ${inboxFields.status.description}`),
  pending: inboxFields.pending
    .optional()
    .describe(`Only with the inbox feature: ${inboxFields.pending.description}`),
  unread: inboxFields.unread
    .optional()
    .describe(`Only with the inbox feature: ${inboxFields.unread.description}`),
  preview: inboxFields.preview
    .optional()
    .describe(`Only with the inbox feature: ${inboxFields.preview.description}`),
  archived: inboxFields.archived
    .optional()
    .describe(`Only with the inbox feature: ${inboxFields.archived.description}`),
};

/**
 * `conversation.read`: mark everything up to `message_id` (default: the latest message) read for the
 * requesting reader (the master secret, or one paired device).
 */
export const ConversationRead = request(
  "conversation.read",
  {
    conversation_id: OpaqueId,
    message_id: OpaqueId.optional().describe(
      "A message of the conversation (an m<n> ID of its history); default: the latest",
    ),
  },
  "Mark a conversation read",
);

/** `conversation.archive`: archive or unarchive a conversation, for every reader. */
export const ConversationArchive = request(
  "conversation.archive",
  { conversation_id: OpaqueId, archived: z.boolean() },
  "Archive or unarchive a conversation",
);

/**
 * `conversation.status`: a conversation's list state changed. The reply to `conversation.read` (also
 * sent to the same reader's other `inbox` connections) and to `conversation.archive` (also sent to
 * every other `inbox` connection), and an event to every `inbox` connection whenever the state
 * changes, each reader with its own `unread`. About the list, not an open conversation: no `seq`, not
 * in the replay log.
 */
export const ConversationStatus = event(
  "conversation.status",
  { conversation_id: z.string(), ...inboxFields },
  "A conversation's list state",
);

/** `conversation.search`: full-text search over every message of every conversation (archived too). */
export const ConversationSearch = request(
  "conversation.search",
  {
    query: boundedText({ max: LIMITS.searchQueryChars, nonBlank: true }).describe(
      "Words to find (1..200 characters, non-blank); FTS5 syntax works, and a query it cannot parse is searched as plain words",
    ),
    limit: z
      .number()
      .int()
      .min(1)
      .max(LIMITS.searchResults)
      .optional()
      .describe("Most results, 1..50; defaults to 20"),
  },
  "Search every conversation's messages",
);

/** One hit of `conversation.results`. */
export const SearchResult = z
  .object({
    conversation_id: z.string(),
    message_id: z.string(),
    snippet: boundedText({ max: LIMITS.searchSnippetChars }).describe(
      "Plain text around the match, at most 200 characters, no markup",
    ),
    ts: Timestamp.nullable(),
  })
  .describe("A message that matches a search");

/** `conversation.results`: reply to `conversation.search`. */
export const ConversationResults = event(
  "conversation.results",
  {
    query: z.string().describe("The query, as sent"),
    results: z.array(SearchResult).max(LIMITS.searchResults).describe("Newest first"),
  },
  "Search results",
);

/** Parsed form of {@link ConversationPreview}. */
export type ConversationPreview = z.infer<typeof ConversationPreview>;
/** Parsed form of {@link SearchResult}. */
export type SearchResult = z.infer<typeof SearchResult>;
