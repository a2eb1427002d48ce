package dev.pheby.client

import dev.pheby.protocol.ClientMessage
import dev.pheby.protocol.ConversationHistory
import dev.pheby.protocol.ConversationOpen
import dev.pheby.protocol.MessageComplete
import dev.pheby.protocol.MessageDelta
import dev.pheby.protocol.ServerMessage
import dev.pheby.protocol.applyTo
import kotlinx.serialization.json.JsonObject

// How a negotiated extension of v1 plugs into the client (docs/kotlin.md, "Extensions"). Each one the
// client implements is an instance for the client's whole life (state that must survive a reconnect,
// such as resume's sequence numbers, lives in it), active on every connection whose `ready.features`
// enabled it. The app asks for the feature by name in PhebyClientOptions.features and gets its frames
// and requests through events, request() and the feature's typed calls.

/** What an extension can do on the connection whose frames it sees. */
internal fun interface ExtensionLink {
    /** Send [message] on this connection; its reply, if any, arrives as an event. False if it is closed. */
    fun send(message: ClientMessage): Boolean
}

/** A Pheby extension the client implements, enabled per connection by `hello.features` / `ready.features`. */
internal interface ClientExtension {
    /** Its `hello.features` name. */
    val feature: String

    /**
     * A connection enabled the feature; called on its reader thread before its first frame after
     * `ready`, and before requests can use it (so what [link] is sent here goes first).
     */
    fun onConnected(link: ExtensionLink) {}

    /**
     * Every frame of such a connection, in order, before anyone sees it: the frame to deliver on
     * `events`, or null to keep it from them. [isReply]: it answers a request waiting on this
     * connection (which gets it either way); [json] is the frame as received.
     */
    fun onFrame(message: ServerMessage, link: ExtensionLink, isReply: Boolean, json: JsonObject): ServerMessage? = message
}

/**
 * The extensions the client implements, by feature name, in the order they see frames: `resume` first,
 * so the events it holds back during a catch-up never reach the others (the replay brings them again).
 */
internal val BUILT_IN_EXTENSIONS: Map<String, () -> ClientExtension> = linkedMapOf(
    Features.RESUME to ::Resume,
    Features.DELTA_APPEND to ::DeltaAppend,
    Features.PUSH to ::PushPresence,
)

/**
 * `delta.append`: each `message.delta` carries only the text from `offset` on. Stitches them back into
 * v1's cumulative form (no `offset`), so the app sees the whole draft, as `@pheby/client` does.
 */
internal class DeltaAppend : ClientExtension {
    override val feature: String = Features.DELTA_APPEND

    /** Draft text by message_id. */
    private val drafts = HashMap<String, String>()

    /**
     * Conversations re-opened after a missed delta, until their `conversation.history` arrives: every later
     * delta of the broken draft misses too, and one snapshot repairs them all (not one per delta).
     */
    private val reopening = HashSet<String>()

    // The server starts every draft over (offset 0, whole text) on a new connection and in a replay.
    // Synchronized with onFrame: the old connection's reader may still be in it while a new one starts.
    @Synchronized
    override fun onConnected(link: ExtensionLink) {
        drafts.clear()
        reopening.clear()
    }

    @Synchronized
    override fun onFrame(message: ServerMessage, link: ExtensionLink, isReply: Boolean, json: JsonObject): ServerMessage? = when (message) {
        is MessageDelta -> {
            val draft = try {
                message.applyTo(drafts[message.messageId] ?: "")
            } catch (e: IllegalArgumentException) {
                null
            }
            if (draft == null) {
                // A delta was missed: the snapshot's run.text is the whole draft (it resets ours below).
                if (reopening.add(message.conversationId)) link.send(ConversationOpen(conversationId = message.conversationId))
                null
            } else {
                drafts[message.messageId] = draft
                message.copy(offset = null, text = draft)
            }
        }
        is MessageComplete -> message.also { drafts.remove(it.messageId) }
        is ConversationHistory -> message.also { history ->
            reopening -= history.conversationId
            history.run?.let { drafts[it.messageId] = it.text }
        }
        else -> message
    }
}
