package dev.pheby.client

import dev.pheby.protocol.RunFinished
import dev.pheby.protocol.ServerMessage
import dev.pheby.protocol.ThoughtComplete
import dev.pheby.protocol.ThoughtDelta
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.async
import kotlinx.coroutines.flow.filter
import kotlinx.coroutines.flow.takeWhile
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.AfterAll
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

/**
 * The `thoughts` extension against the real server's simulator (`/sim think`): the thinking streams
 * before the answer, each `thought.delta` the client hands over is the whole thought so far, the
 * thought's limit holds at its exact boundary, and a client that did not ask sees only the answer.
 */
class ThoughtsTest : ServerTest() {
    /** A client that asked for `thoughts` (the shared [client] did not: it is opt-in). */
    private val thinker = runBlocking { server.client { copy(features = features + Features.THOUGHTS) } }

    @AfterAll
    fun closeThinker() = thinker.close()

    /** The thought frames of [frames] checked as the app sees them; returns the thought's final text. */
    private fun checkThought(frames: List<ServerMessage>): String {
        val deltas = frames.filterIsInstance<ThoughtDelta>()
        val complete = frames.filterIsInstance<ThoughtComplete>().single()
        assertTrue(deltas.isNotEmpty(), "the thought streamed")
        assertTrue(deltas.all { it.offset == 0L && it.thoughtId == complete.thoughtId }, "stitched: offset 0, the whole thought so far")
        deltas.zipWithNext().forEach { (a, b) -> assertTrue(b.text.startsWith(a.text), "a delta extends the thought") }
        assertTrue(complete.text.startsWith(deltas.last().text))
        // The agent thinks, then answers: the thought is complete before the answer's first delta.
        assertTrue(frames.indexOf(complete) < frames.indexOfFirst { it is dev.pheby.protocol.MessageDelta })
        return complete.text
    }

    @Test
    fun `a thinking run streams the whole thought so far, then thought_complete, then the answer - only to thoughts clients`() = blocking {
        assertTrue(Features.THOUGHTS in thinker.features)
        assertFalse(Features.THOUGHTS in client.features, "opt-in")
        val id = thinker.createConversation("Thinking").conversationId
        val plain = async(start = CoroutineStart.UNDISPATCHED) {
            client.events.filter { it.conversationIdOrNull() == id || it is ThoughtDelta || it is ThoughtComplete }
                .takeWhile { !(it is RunFinished && it.conversationId == id) }.toList()
        }
        val watched = async(start = CoroutineStart.UNDISPATCHED) { thinker.thoughts(id).takeWhile { it !is ThoughtComplete }.toList() }

        val frames = thinker.chat(id, "/sim think").toList()
        assertEquals("The user wants to see me think \uD83E\uDD14 so I reason step by step before answering.", checkThought(frames))
        assertEquals("I thought about it first; this is the answer.", checkRun(frames.filter { it !is ThoughtDelta && it !is ThoughtComplete }))
        assertEquals(frames.filterIsInstance<ThoughtDelta>(), watched.await(), "thoughts(id) hands over the same deltas")
        val v1 = plain.await()
        assertTrue(v1.any { it is dev.pheby.protocol.MessageComplete }, "the client without thoughts got the answer")
        assertTrue(v1.none { it is ThoughtDelta || it is ThoughtComplete }, "and none of the thinking")
        assertEquals(null, client.openConversation(id).thoughts, "nor the history's thoughts field")
    }

    @Test
    fun `a thought of 64,000 characters arrives whole, a longer one is cut there`() = blocking {
        val id = thinker.createConversation("Long thoughts").conversationId
        assertEquals(64_000, checkThought(thinker.chat(id, "/sim think 64000").toList()).length)
        assertEquals(64_000, checkThought(thinker.chat(id, "/sim think 64001").toList()).length)
    }
}
