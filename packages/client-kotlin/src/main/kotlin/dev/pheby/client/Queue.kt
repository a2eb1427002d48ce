package dev.pheby.client

// The `queue` extension (docs/protocol.md, "Extension: queued follow-ups"): a message sent while a run
// is active waits for it instead of failing with run_active. The queue itself arrives as
// `queue.changed` events (and `ConversationHistory.queue`); a queued run is cancelled with cancelRun.

import dev.pheby.protocol.ChatSend
import dev.pheby.protocol.RunAccepted
import dev.pheby.protocol.RunQueued
import dev.pheby.protocol.ServerMessage

/** What a `chat.send` with `queue` got: its run started at once, or it waits in the conversation's queue. */
sealed interface SendResult {
    /** The run's ID: the one its `run.accepted` carries, now or when it starts; [PhebyClient.cancelRun] takes it. */
    val runId: String

    /** No run was active: it started (`run.accepted`). */
    data class Started(val accepted: RunAccepted) : SendResult {
        override val runId: String get() = accepted.runId
    }

    /** A run was active: it waits (`run.queued`, `position` 1 starts next) and starts when the runs before it end. */
    data class Queued(val queued: RunQueued) : SendResult {
        override val runId: String get() = queued.runId
    }
}

/**
 * `chat.send` with `queue: true` (the `queue` extension, asked for by default): starts a run like
 * [PhebyClient.sendMessage] when none is active, else queues it behind the active one (at most 20 per
 * conversation; the 21st is `bad_request`). Queued runs start in order as the one before ends, whatever
 * its status; [PhebyClient.cancelRun] with [SendResult.runId] removes one from the queue. Every `queue`
 * client gets `queue.changed` (the whole queue) whenever it changes. [clientMessageId] and retries as
 * in [PhebyClient.sendMessage]. On a connection without `queue` the field is ignored (v1): `run_active`.
 */
suspend fun PhebyClient.queueMessage(
    conversationId: String,
    text: String,
    attachmentIds: List<String> = emptyList(),
    clientMessageId: String? = null,
): SendResult {
    val send = ChatSend(conversationId = conversationId, text = text, attachmentIds = attachmentIds.ifEmpty { null }, clientMessageId = clientMessageId, queue = true)
    return when (val reply = request(send, ServerMessage::class)) {
        is RunAccepted -> SendResult.Started(reply)
        is RunQueued -> SendResult.Queued(reply)
        else -> error("chat.send was answered ${reply::class.simpleName}")
    }
}
