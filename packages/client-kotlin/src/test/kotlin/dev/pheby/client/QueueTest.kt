package dev.pheby.client

import dev.pheby.protocol.MessageDelta
import dev.pheby.protocol.MessageRole
import dev.pheby.protocol.QueueChanged
import dev.pheby.protocol.RunAccepted
import dev.pheby.protocol.RunQueued
import dev.pheby.protocol.RunStatus
import dev.pheby.protocol.ServerMessage
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.async
import kotlinx.coroutines.flow.onEach
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.launch
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertInstanceOf
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import java.util.Collections

/** The `queue` extension against the real server: follow-ups queued during a run, started in order, cancelled. */
class QueueTest : ServerTest() {
    @Test
    fun `a follow-up sent during a run is queued and starts when the run ends, a queued run can be cancelled`() = blocking {
        val id = newConversation("Queued")
        val changes = Collections.synchronizedList(mutableListOf<List<String>>())
        launch(start = CoroutineStart.UNDISPATCHED) {
            client.events.collect { if (it is QueueChanged && it.conversationId == id) changes += it.queued.map { q -> q.text } }
        }
        val streaming = CompletableDeferred<Unit>()
        val slow = async { client.chat(id, "/sim slow").onEach { if (it is MessageDelta) streaming.complete(Unit) }.toList() }
        streaming.await()

        expectPheby("run_active") { client.sendMessage(id, "not queued") }
        server.client { copy(features = setOf(Features.DELTA_APPEND)) }.use { v1 ->
            expectPheby("run_active") { v1.queueMessage(id, "a v1 connection cannot queue") }
        }

        val waiting = CompletableDeferred<Unit>()
        val followUp = async { client.chat(id, "the follow-up", queue = true).onEach { if (it is RunQueued) waiting.complete(Unit) }.toList() }
        waiting.await()
        val never = client.queueMessage(id, "never runs")
        assertEquals(2L, assertInstanceOf(SendResult.Queued::class.java, never).queued.position)
        val cancelled = client.cancelRun(id, never.runId)
        assertEquals(RunStatus.CANCELLED, cancelled.status)
        assertEquals(never.runId, cancelled.runId)

        checkRun(slow.await())
        val frames = followUp.await()
        val queued = assertInstanceOf(RunQueued::class.java, frames.first())
        assertEquals(1L, queued.position)
        val run = frames.dropWhile { it !is RunAccepted }
        assertTrue(frames.takeWhile { it !is RunAccepted }.drop(1).all { it is QueueChanged }, "while it waits: the queue's changes: $frames")
        assertEquals(queued.runId, (run.first() as RunAccepted).runId)
        assertNull(run.first().requestId, "a queued run starts as an ordinary run, announced to everybody")
        assertTrue(checkRun(run).contains("the follow-up"))

        assertEquals(listOf(listOf("the follow-up"), listOf("the follow-up", "never runs"), listOf("the follow-up"), emptyList()), changes.toList())
        val history = client.openConversation(id)
        assertEquals(listOf("/sim slow", "the follow-up"), history.messages.filter { it.role == MessageRole.USER }.map { it.text })
        assertEquals(emptyList<ServerMessage>(), history.queue.orEmpty())
    }

    @Test
    fun `with no run active, a queued send starts at once`() = blocking {
        val id = newConversation("Not queued")
        val frames = client.chat(id, "straight away", queue = true).toList()
        assertTrue(frames.none { it is RunQueued })
        assertTrue(checkRun(frames).contains("straight away"))
        val started = assertInstanceOf(SendResult.Started::class.java, client.queueMessage(id, "also straight away"))
        assertTrue(started.runId != (frames.first() as RunAccepted).runId)
    }
}
