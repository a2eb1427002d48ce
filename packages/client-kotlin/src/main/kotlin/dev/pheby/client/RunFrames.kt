package dev.pheby.client

import dev.pheby.protocol.ApprovalRequest
import dev.pheby.protocol.ApprovalResolved
import dev.pheby.protocol.AttachmentAdded
import dev.pheby.protocol.ClarifyRequest
import dev.pheby.protocol.ClarifyResolved
import dev.pheby.protocol.ConversationHistory
import dev.pheby.protocol.MessageComplete
import dev.pheby.protocol.MessageDelta
import dev.pheby.protocol.MessageStart
import dev.pheby.protocol.PlanUpdated
import dev.pheby.protocol.QueueChanged
import dev.pheby.protocol.RunAccepted
import dev.pheby.protocol.RunFinished
import dev.pheby.protocol.RunQueued
import dev.pheby.protocol.ServerMessage
import dev.pheby.protocol.ThoughtComplete
import dev.pheby.protocol.ThoughtDelta
import dev.pheby.protocol.ToolEvent
import dev.pheby.protocol.UsageUpdated

/** The `request_id`s of the re-opens after a reconnect start with this: their answers are resync answers. */
internal const val RESYNC_REQUEST_PREFIX = "resync-"

/**
 * Which frames belong to the run a [PhebyClient.chat] started, in the order to emit them. The run is
 * known by the reply to its `chat.send` ([sendId]): `run.accepted`, or `run.queued` (then it starts
 * with a `run.accepted` of the same `run_id` later). One run at a time per conversation, so once it
 * started every message, tool, question and attachment of the conversation is the run's, and so are
 * its thoughts and plan (by `run_id`) and usage updates, until its `run.finished`.
 *
 * After a drop the reply may come late: with `resume`, after the replay of the run's first frames (its
 * `run.accepted` among them, which the client's events then carry only once); without, after a snapshot
 * of the conversation. Frames seen before the run is known are kept and looked at again once it is.
 * A snapshot that answers a reconnect's re-open (its `request_id` starts with [RESYNC_REQUEST_PREFIX])
 * is emitted when it concerns the run, and ends the flow when the run is over: neither active nor queued
 * there although it had started, was queued, or its user message ([clientMessageId]) is in the history.
 *
 * Not thread-safe: the caller serialises [take] and [learn].
 */
internal class RunFrames(private val conversationId: String, private val sendId: String, private val clientMessageId: String?) {
    private var runId: String? = null
    private var queued = false
    private var started = false
    private val questions = HashSet<String>()
    private val early = ArrayList<ServerMessage>()

    /** The run finished (or is known to be over): nothing more is emitted. */
    var finished = false
        private set

    /** A frame from the client's events; returns what to emit now. */
    fun take(message: ServerMessage): List<ServerMessage> {
        if (finished) return emptyList()
        if (runId == null) {
            if ((message is RunAccepted || message is RunQueued) && message.requestId == sendId) return learn(message)
            early += message
            return emptyList()
        }
        return step(message)
    }

    /** The reply to the `chat.send` (from the request, when the events did not carry it); returns what to emit now. */
    fun learn(reply: ServerMessage): List<ServerMessage> {
        if (runId != null || finished) return emptyList()
        runId = when (reply) {
            is RunAccepted -> reply.runId
            is RunQueued -> reply.runId.also { queued = true }
            else -> error("not a reply to chat.send: $reply")
        }
        val out = early.flatMap(::step) + step(reply)
        early.clear()
        return out
    }

    private fun step(message: ServerMessage): List<ServerMessage> {
        if (finished) return emptyList()
        val run = runId
        val mine = when (message) {
            is RunQueued -> message.runId == run && !started
            is RunAccepted -> (message.runId == run && !started).also { if (it) started = true }
            is RunFinished -> (message.runId == run).also { if (it) finished = true }
            is ConversationHistory -> message.conversationId == conversationId &&
                message.requestId?.startsWith(RESYNC_REQUEST_PREFIX) == true && snapshot(message)
            is QueueChanged -> message.conversationId == conversationId && !started && queued
            else -> started && duringRun(message)
        }
        return if (mine) listOf(message) else emptyList()
    }

    /**
     * A reconnect's snapshot: the run is active there (it goes on), queued (it waits), or over; emitted
     * then. Otherwise the send was not handled yet when it was taken (it was made, or its connection
     * dropped, before it reached the server), so it says nothing of the run: its retry starts the run after it.
     */
    private fun snapshot(history: ConversationHistory): Boolean {
        when {
            history.run?.runId == runId -> started = true
            history.queue.orEmpty().any { it.runId == runId } -> Unit
            // Not there: over, if it was ever there.
            started || queued || history.messages.any { clientMessageId != null && it.clientMessageId == clientMessageId } -> finished = true
            else -> return false
        }
        return true
    }

    private fun duringRun(message: ServerMessage): Boolean = when (message) {
        is MessageStart -> message.runId == runId
        is ToolEvent -> message.conversationId == conversationId
        // One run at a time per conversation: its messages (notices included) are this run's.
        is MessageDelta -> message.conversationId == conversationId
        is MessageComplete -> message.conversationId == conversationId
        is AttachmentAdded -> message.conversationId == conversationId
        is ApprovalRequest -> (message.conversationId == conversationId).also { if (it) questions += message.approvalId }
        is ClarifyRequest -> (message.conversationId == conversationId).also { if (it) questions += message.clarifyId }
        is ApprovalResolved -> message.approvalId in questions
        is ClarifyResolved -> message.clarifyId in questions
        // The extensions' frames of the run: its thinking (`thoughts`), its plan and the context it used (`activity`).
        is ThoughtDelta -> message.runId == runId
        is ThoughtComplete -> message.runId == runId
        is PlanUpdated -> message.runId == runId
        is UsageUpdated -> message.conversationId == conversationId
        else -> false
    }
}
