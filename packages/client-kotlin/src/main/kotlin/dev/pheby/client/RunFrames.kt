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
import dev.pheby.protocol.RunAccepted
import dev.pheby.protocol.RunFinished
import dev.pheby.protocol.ServerMessage
import dev.pheby.protocol.ToolEvent
import java.util.concurrent.ConcurrentHashMap

/**
 * Which frames belong to the run a [PhebyClient.chat] started, known by the `run.accepted` that answers
 * [sendId]: one run at a time per conversation, so after it every message, tool, question and attachment of
 * the conversation is the run's, until its `run.finished`.
 */
internal class RunFrames(private val conversationId: String, private val sendId: String) {
    @Volatile var runId: String? = null
    private val questions = ConcurrentHashMap.newKeySet<String>()

    fun accepts(message: ServerMessage): Boolean {
        val run = runId
        if (run == null) {
            if (message is RunAccepted && message.requestId == sendId) runId = message.runId
            return runId != null
        }
        return when (message) {
            is MessageStart -> message.runId == run
            is RunFinished -> message.runId == run
            is ToolEvent -> message.conversationId == conversationId
            // One run at a time per conversation: its messages (notices included) are this run's.
            is MessageDelta -> message.conversationId == conversationId
            is MessageComplete -> message.conversationId == conversationId
            is AttachmentAdded -> message.conversationId == conversationId
            is ApprovalRequest -> (message.conversationId == conversationId).also { if (it) questions += message.approvalId }
            is ClarifyRequest -> (message.conversationId == conversationId).also { if (it) questions += message.clarifyId }
            is ApprovalResolved -> message.approvalId in questions
            is ClarifyResolved -> message.clarifyId in questions
            else -> false
        }
    }

    fun finishedBy(message: ServerMessage): Boolean = message is RunFinished && message.runId == runId

    fun isActiveIn(snapshot: ConversationHistory): Boolean = snapshot.run?.runId == runId
}
