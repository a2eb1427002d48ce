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
 * Each is made from the client's one [Drafts]: message and thought deltas are stitched by one rule, and
 * a gap in both streams of a conversation costs one re-open.
 */
internal val BUILT_IN_EXTENSIONS: Map<String, (Drafts) -> ClientExtension> = linkedMapOf(
    Features.RESUME to { _: Drafts -> Resume() },
    Features.DELTA_APPEND to ::DeltaAppend,
    Features.THOUGHTS to ::Thoughts,
    Features.PUSH to { _: Drafts -> PushPresence() },
)

/**
 * Texts that stream as append deltas (`offset` + `text`, docs/protocol.md "Append deltas"), by their ID
 * (message and thought IDs are distinct): `message.delta` with `delta.append`, `thought.delta` with
 * `thoughts`. One per client, shared by the extensions that stitch: the same rules, kept once.
 *
 * The server starts every text over (offset 0, whole text) on a new connection and in a replay, so
 * [clear] on each connection. A delta whose offset lies beyond what was received means one was missed:
 * every later delta of that text misses too, and one snapshot of its conversation repairs them all, so
 * the conversation is re-opened once (not once per delta) until its `conversation.history` arrives.
 *
 * Thread-safe: the old connection's reader may still be in it while a new one starts.
 */
internal class Drafts {
    /** Text so far, by message or thought ID. */
    private val texts = HashMap<String, String>()

    /** Conversations re-opened after a missed delta, until their snapshot arrives. */
    private val reopening = HashSet<String>()

    /** A new connection: every text starts over. */
    @Synchronized
    fun clear() {
        texts.clear()
        reopening.clear()
    }

    /**
     * The whole text of [id] after a delta of [conversationId], which [apply] computes from the text so
     * far (throwing [IllegalArgumentException] for an offset beyond it); null when a delta was missed:
     * the conversation is then re-opened on [link] (once) and the delta must be dropped.
     */
    @Synchronized
    fun append(conversationId: String, id: String, link: ExtensionLink, apply: (String) -> String): String? {
        val text = try {
            apply(texts[id] ?: "")
        } catch (e: IllegalArgumentException) {
            if (reopening.add(conversationId)) link.send(ConversationOpen(conversationId = conversationId))
            return null
        }
        texts[id] = text
        return text
    }

    /** [id] is complete: no delta of it follows. */
    @Synchronized
    fun complete(id: String) {
        texts.remove(id)
    }

    /** A snapshot of [conversationId] arrived (it ends a re-open); [current] are its texts in progress, by ID. */
    @Synchronized
    fun snapshot(conversationId: String, current: Map<String, String>) {
        reopening -= conversationId
        texts += current
    }
}

/**
 * `delta.append`: each `message.delta` carries only the text from `offset` on. Stitches them back into
 * v1's cumulative form (no `offset`), so the app sees the whole draft, as `@pheby/client` does.
 */
internal class DeltaAppend(private val drafts: Drafts) : ClientExtension {
    override val feature: String = Features.DELTA_APPEND

    override fun onConnected(link: ExtensionLink) = drafts.clear()

    override fun onFrame(message: ServerMessage, link: ExtensionLink, isReply: Boolean, json: JsonObject): ServerMessage? = when (message) {
        // A missed delta is dropped: the snapshot's run.text is the whole draft (it resets ours below).
        is MessageDelta -> drafts.append(message.conversationId, message.messageId, link, message::applyTo)?.let { message.copy(offset = null, text = it) }
        is MessageComplete -> message.also { drafts.complete(it.messageId) }
        is ConversationHistory -> message.also { history ->
            drafts.snapshot(history.conversationId, history.run?.let { mapOf(it.messageId to it.text) }.orEmpty())
        }
        else -> message
    }
}
