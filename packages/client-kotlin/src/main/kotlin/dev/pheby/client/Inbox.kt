package dev.pheby.client

// The `inbox` extension (docs/protocol.md, "Extension: an inbox"): the conversation list as an inbox.
// Asked for by default (as in @pheby/client). On an `inbox` connection every ConversationSummary (of
// `conversation.snapshot`, `conversation.created`, `conversation.updated`) carries `status`, `pending`,
// `unread`, `preview` and `archived` (in the generated models; absent without the feature), a row that
// changes arrives as `conversation.status` on PhebyClient.events (never with `seq`, never replayed: after a
// reconnect list again), and `listConversations` leaves archived conversations out unless asked for them.
// Unread counts are per reader: each paired device and the master secret keep their own. Without the
// feature the server answers these requests `unknown_type`.

import dev.pheby.protocol.ConversationArchive
import dev.pheby.protocol.ConversationRead
import dev.pheby.protocol.ConversationResults
import dev.pheby.protocol.ConversationSearch
import dev.pheby.protocol.ConversationStatus
import dev.pheby.protocol.ConversationSummary
import dev.pheby.protocol.OptionalNullable
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.filter
import kotlinx.coroutines.flow.filterIsInstance

/**
 * `conversation.read`: marks [conversationId] read up to [messageId] (an `m<n>` ID of its history; null:
 * up to the latest message) for this client's reader (its paired device, or the master secret). Only this
 * marks read: opening a conversation does not. A mark never goes backwards (an older [messageId] changes
 * nothing). Returns the conversation's `conversation.status` with this reader's `unread`; the same
 * reader's other `inbox` connections get it without `requestId`, other readers nothing. Throws
 * [PhebyException]: `bad_request` for a message ID the conversation does not have,
 * `conversation_not_found`, and `unknown_type` without [Features.INBOX].
 */
suspend fun PhebyClient.markRead(conversationId: String, messageId: String? = null): ConversationStatus =
    request(ConversationRead(conversationId = conversationId, messageId = messageId))

/**
 * `conversation.archive`: archives [conversationId] ([archived] true) or brings it back (false), one state
 * for every reader. Returns `conversation.status`; every other `inbox` connection gets the same event
 * without `requestId`. Archiving an archived conversation changes nothing and is answered the same way; a
 * new message does not unarchive it. An archived conversation is listed only by
 * `listConversations(archived = true)`.
 */
suspend fun PhebyClient.archive(conversationId: String, archived: Boolean = true): ConversationStatus =
    request(ConversationArchive(conversationId = conversationId, archived = archived))

/**
 * `conversation.search`: full-text search over every message of every conversation (archived ones too),
 * newest first, at most [limit] results (1..50; null: the server's default, 20). [query] is 1..200
 * characters, not blank, in SQLite FTS5's language (`deploy AND staging`, `"exact phrase"`, `depl*`); one
 * it cannot parse is searched as plain words, never an error. Each result names the conversation and the
 * `m<n>` message, with a plain-text `snippet` of at most 200 characters around the match.
 */
suspend fun PhebyClient.search(query: String, limit: Int? = null): ConversationResults =
    request(ConversationSearch(query = query, limit = limit?.toLong()))

/**
 * Every `conversation.status` from now on, of [conversationId] (null: of every conversation): a list row
 * that changed (a run started or ended, a question arrived or was answered, a message was recorded, this
 * reader read, someone archived), with this reader's `unread`. Each one replaces the row's inbox fields.
 * They are not replayed after a drop: list again on reconnect.
 */
fun PhebyClient.statusChanges(conversationId: String? = null): Flow<ConversationStatus> =
    events.filterIsInstance<ConversationStatus>().filter { conversationId == null || it.conversationId == conversationId }

/**
 * This list entry with the inbox fields of [status] (a `conversation.status` of the same conversation):
 * what a list shows after the event, without listing again. Another conversation's status changes nothing.
 */
fun ConversationSummary.withStatus(status: ConversationStatus): ConversationSummary =
    if (status.conversationId != conversationId) {
        this
    } else {
        copy(
            status = status.status,
            pending = status.pending,
            unread = status.unread,
            preview = OptionalNullable.Value(status.preview),
            archived = status.archived,
        )
    }
