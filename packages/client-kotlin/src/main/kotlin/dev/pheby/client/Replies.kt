package dev.pheby.client

import dev.pheby.protocol.ChatSend
import dev.pheby.protocol.ClientMessage
import dev.pheby.protocol.ConversationOpen
import dev.pheby.protocol.REQUEST_REPLIES
import dev.pheby.protocol.ServerMessage
import kotlin.reflect.KClass

/**
 * The direct reply of each request (`error` is always possible too), from the generated
 * [REQUEST_REPLIES] (`@pheby/protocol`'s `schema/meta.json`). `run.cancel` is answered by the run's
 * single `run.finished`, which carries the canceller's `request_id`.
 */
internal val REPLY_TYPES: Map<KClass<out ClientMessage>, KClass<out ServerMessage>> =
    REQUEST_REPLIES.values.associate { it.request to it.reply.messageClass }

/**
 * The other direct reply two requests may get when they use an extension field (from [REQUEST_REPLIES]):
 * `chat.send` with `queue` (`run.queued` while a run is active) and `conversation.open` with
 * `since_seq` (`conversation.resumed`).
 */
internal val ALTERNATIVE_REPLY_TYPES: Map<KClass<out ClientMessage>, KClass<out ServerMessage>> =
    REQUEST_REPLIES.values.mapNotNull { r -> r.alternative?.let { r.request to it.messageClass } }.toMap()

/** The replies [message] may get (besides `error`), or null for a type the client does not know. */
internal fun repliesTo(message: ClientMessage): List<KClass<out ServerMessage>>? {
    val reply = REPLY_TYPES[message::class] ?: return null
    // Which field brings the alternative is the protocol's prose (docs/protocol.md), not a table.
    val alternative = when (message) {
        is ChatSend -> message.queue == true
        is ConversationOpen -> message.sinceSeq != null
        else -> false
    }
    return listOfNotNull(reply, ALTERNATIVE_REPLY_TYPES[message::class]?.takeIf { alternative })
}
