package dev.pheby.client

// The client side of the `resume` extension (docs/protocol.md, "Extension: resume after a drop"): where
// each conversation is (its last `seq`), which conversations are being caught up after a reconnect, and
// the idempotency keys of sends. The send queue and the retry of a send whose reply was lost live with the
// requests in PhebyClient; this file is what they consult. Mirrors @pheby/client's resume.ts.

import dev.pheby.protocol.ConversationDeleted
import dev.pheby.protocol.ConversationHistory
import dev.pheby.protocol.ConversationOpen
import dev.pheby.protocol.ConversationResumed
import dev.pheby.protocol.RunAccepted
import dev.pheby.protocol.ServerMessage
import dev.pheby.protocol.stringOrNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.longOrNull
import java.security.SecureRandom

private val random = SecureRandom()

/**
 * A new `client_message_id`: 32 random hex characters (128 bits from `SecureRandom`). The client gives
 * one to every `chat.send` and `conversation.create` that has none when it asked for `resume`; give one
 * yourself (`sendMessage(…, clientMessageId = id)`, [PhebyClient.chat]) to match the user message in
 * history (`HistoryMessage.clientMessageId`) with your optimistic bubble. Never reuse one for another message.
 */
fun newClientMessageId(): String {
    val bytes = ByteArray(16).also(random::nextBytes)
    return bytes.joinToString("") { "%02x".format(it) }
}

/**
 * `resume` inside the client: the highest `seq` handled per conversation (what a re-open after a drop
 * asks from), the conversations being caught up, and the run IDs of the `run.accepted` already handled.
 *
 * While a conversation is caught up (from a reconnect's `ready` until its re-open is answered), its
 * events are dropped: the server logged them before it answered, so the replay (or the snapshot) that
 * follows the answer carries them, exactly once and in order. A `run.accepted` seen before is dropped
 * from the events too (a retried send's answer, after its replay); its request still gets it.
 */
internal class Resume : ClientExtension {
    override val feature: String = Features.RESUME

    private val positions = HashMap<String, Long>()
    private val syncing = HashSet<String>()
    private val accepted = LinkedHashSet<String>()

    /** The positions at the last reconnect's `ready`, which the re-opens after it ask from. */
    private var caught: Map<String, Long?>? = null

    /** The last `seq` handled for [conversationId], if any. */
    @Synchronized
    fun position(conversationId: String): Long? = positions[conversationId]

    /** A reconnect's `ready`, on the reader thread before its next frame: hold [conversationIds]' events from now on. */
    @Synchronized
    fun catchUp(conversationIds: Set<String>) {
        caught = conversationIds.associateWith { positions[it] }
        syncing += conversationIds
    }

    /**
     * The `conversation.open` of each of [follows] (conversation → history limit), with `since_seq` where
     * a position is known: the one caught at the reconnect's `ready`, or, for a resync the app asked for,
     * the current one (and its events are held from now on).
     */
    @Synchronized
    fun reopen(follows: Map<String, Long?>, requestId: () -> String): Map<String, ConversationOpen> {
        val since = caught ?: follows.keys.associateWith { positions[it] }.also { syncing += follows.keys }
        caught = null
        return follows.mapValues { (id, limit) -> ConversationOpen(requestId = requestId(), conversationId = id, limit = limit, sinceSeq = since[id]) }
    }

    /** Stop holding a conversation's events (its re-open failed). */
    @Synchronized
    fun synced(conversationId: String) {
        syncing -= conversationId
    }

    @Synchronized
    override fun onFrame(message: ServerMessage, link: ExtensionLink, isReply: Boolean, json: JsonObject): ServerMessage? {
        val id = json.stringOrNull("conversation_id") ?: return message
        if (message is ConversationResumed || message is ConversationHistory) {
            if (isReply) syncing -= id
        } else if (!isReply && id in syncing) {
            return null
        }
        if (message is RunAccepted && !remember(message.runId)) return null
        val seq = (json["seq"] as? JsonPrimitive)?.takeIf { !it.isString }?.longOrNull
        when {
            message is ConversationDeleted -> positions -= id
            // A snapshot replaces what we had, position included; an event moves it forward.
            message is ConversationHistory -> if (seq != null) positions[id] = seq
            seq != null && seq > (positions[id] ?: -1) -> positions[id] = seq
        }
        return message
    }

    /** False for a run ID already handled. The last [REMEMBERED_RUNS] are kept. */
    private fun remember(runId: String): Boolean {
        if (!accepted.add(runId)) return false
        if (accepted.size > REMEMBERED_RUNS) accepted.remove(accepted.first())
        return true
    }

    private companion object {
        const val REMEMBERED_RUNS = 256
    }
}
