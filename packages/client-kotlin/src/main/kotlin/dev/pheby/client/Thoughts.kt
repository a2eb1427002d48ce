package dev.pheby.client

// The `thoughts` extension (docs/protocol.md, "Extension: thoughts"): the agent's thinking as it
// streams, beside its answer. Not asked for by default (as in @pheby/client: it can be the bulk of a
// run's bytes); add Features.THOUGHTS where the app shows thinking. Its deltas follow delta.append's
// rules whatever else the connection enabled; the client stitches them as it stitches message deltas
// (the same Drafts), so the app always sees the whole thought so far.

import dev.pheby.protocol.ConversationHistory
import dev.pheby.protocol.ServerMessage
import dev.pheby.protocol.ThoughtComplete
import dev.pheby.protocol.ThoughtDelta
import dev.pheby.protocol.applyTo
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.filter
import kotlinx.serialization.json.JsonObject

/**
 * `thoughts`: each `thought.delta` carries the thought's text from `offset` on. Stitched, so the app
 * gets every `thought.delta` with `offset` 0 and the whole thought so far (what a connection's first
 * delta of a thought carries anyway): render `text` by replacing, never by appending. A missed delta is
 * dropped and the conversation re-opened once (one re-open also repairs the message deltas, [Drafts]); its
 * `conversation.history.thoughts` (the active run's thoughts so far) carry each thought's text, which the
 * next delta continues.
 */
internal class Thoughts(private val drafts: Drafts) : ClientExtension {
    override val feature: String = Features.THOUGHTS

    override fun onConnected(link: ExtensionLink) = drafts.clear()

    override fun onFrame(message: ServerMessage, link: ExtensionLink, isReply: Boolean, json: JsonObject): ServerMessage? = when (message) {
        is ThoughtDelta -> drafts.append(message.conversationId, message.thoughtId, link, message::applyTo)?.let { message.copy(offset = 0, text = it) }
        is ThoughtComplete -> message.also { drafts.complete(it.thoughtId) }
        is ConversationHistory -> message.also { history ->
            drafts.snapshot(history.conversationId, history.thoughts.orEmpty().filter { !it.complete }.associate { it.thoughtId to it.text })
        }
        else -> message
    }
}

/**
 * The agent's thinking from now on, of [conversationId] (null: of every conversation): `thought.delta`
 * (the whole thought so far, each time) and `thought.complete` (the whole thought, once it ended: the
 * agent moved on to answering, called a tool, or the turn ended), in order. Nothing arrives unless the
 * connection enabled [Features.THOUGHTS].
 */
fun PhebyClient.thoughts(conversationId: String? = null): Flow<ServerMessage> = events.filter { message ->
    when (message) {
        is ThoughtDelta -> conversationId == null || message.conversationId == conversationId
        is ThoughtComplete -> conversationId == null || message.conversationId == conversationId
        else -> false
    }
}
