package dev.pheby.client

import dev.pheby.protocol.ClientMessage
import dev.pheby.protocol.ConversationHistory
import dev.pheby.protocol.ConversationOpen
import dev.pheby.protocol.FEATURE_DELTA_APPEND
import dev.pheby.protocol.MessageComplete
import dev.pheby.protocol.MessageDelta
import dev.pheby.protocol.ServerMessage
import dev.pheby.protocol.applyTo

// How a negotiated extension of v1 plugs into the client (docs/kotlin.md, "Adding an extension").
// Each one the client implements is an instance for the client's whole life (state that must survive
// a reconnect, such as resume's sequence numbers, lives in it), active on every connection whose
// `ready.features` enabled it. The public API does not change: the app asks for the feature by name
// in PhebyClientOptions.features and gets its frames and requests through events and request().

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

    /** Every frame of such a connection, in order, before anyone sees it: the frame to deliver, or null to drop it. */
    fun onFrame(message: ServerMessage, link: ExtensionLink): ServerMessage? = message

    /**
     * The request that re-opens a followed conversation after a reconnect, or null for v1's plain
     * `conversation.open` (the `resume` extension returns one with `since_seq`). Its reply must be a
     * `conversation.history`.
     */
    fun reopen(conversationId: String, limit: Long?): ClientMessage? = null
}

/** The extensions the client implements, by feature name. */
internal val BUILT_IN_EXTENSIONS: Map<String, () -> ClientExtension> = mapOf(
    Features.DELTA_APPEND to ::DeltaAppend,
    Features.PUSH to ::PushPresence,
)

/**
 * `delta.append`: each `message.delta` carries only the text from `offset` on. Stitches them back into
 * v1's cumulative form (no `offset`), so the app sees the whole draft, as `@pheby/client` does.
 */
internal class DeltaAppend : ClientExtension {
    override val feature: String = FEATURE_DELTA_APPEND

    /** Draft text by message_id. Only touched on the reader thread of the current connection. */
    private val drafts = HashMap<String, String>()

    // The server starts every draft over (offset 0, whole text) on a new connection.
    override fun onConnected(link: ExtensionLink) = drafts.clear()

    override fun onFrame(message: ServerMessage, link: ExtensionLink): ServerMessage? = when (message) {
        is MessageDelta -> {
            val draft = try {
                message.applyTo(drafts[message.messageId] ?: "")
            } catch (e: IllegalArgumentException) {
                null
            }
            if (draft == null) {
                // A delta was missed: the snapshot's run.text is the whole draft (it resets ours below).
                link.send(ConversationOpen(conversationId = message.conversationId))
                null
            } else {
                drafts[message.messageId] = draft
                message.copy(offset = null, text = draft)
            }
        }
        is MessageComplete -> message.also { drafts.remove(it.messageId) }
        is ConversationHistory -> message.also { history -> history.run?.let { drafts[it.messageId] = it.text } }
        else -> message
    }
}
