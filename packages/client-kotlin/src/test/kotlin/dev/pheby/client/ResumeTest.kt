package dev.pheby.client

import dev.pheby.protocol.ConversationHistory
import dev.pheby.protocol.ConversationResumed
import dev.pheby.protocol.MessageComplete
import dev.pheby.protocol.MessageDelta
import dev.pheby.protocol.MessageRole
import dev.pheby.protocol.PhebyJson
import dev.pheby.protocol.RunAccepted
import dev.pheby.protocol.RunFinished
import dev.pheby.protocol.RunStatus
import dev.pheby.protocol.ServerMessage
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.async
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.flow.onEach
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.launch
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import kotlinx.serialization.json.long
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertInstanceOf
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.fail
import java.util.Collections
import kotlin.time.Duration.Companion.milliseconds

/**
 * The `resume` extension against the real server, through a [TcpProxy] the test cuts like a phone
 * losing its network: missed frames replayed once and in order, a restart between the drop and the
 * resume, the snapshot fallback, a lost reply retried without a second run, and the send queue.
 */
class ResumeTest {
    /** The phone: through [proxy], reconnecting quickly. */
    private fun phone(server: PhebyServer, proxy: TcpProxy) = PhebyClient(
        PhebyClientOptions(url = proxy.url, secret = server.secret, reconnect = ReconnectPolicy(initialDelay = 100.milliseconds, maxDelay = 500.milliseconds)),
    )

    /** Runs [block] with a server of its own ([env]), a proxy in front of it, a connected phone behind the proxy and an observer connected directly. */
    private fun scenario(env: Map<String, String> = emptyMap(), block: suspend CoroutineScope.(PhebyServer, TcpProxy, PhebyClient, PhebyClient) -> Unit) = blocking {
        PhebyServer(env).start().use { server ->
            TcpProxy { server.port }.use { proxy ->
                phone(server, proxy).use { phone ->
                    phone.connect()
                    server.client().use { observer -> block(server, proxy, phone, observer) }
                }
            }
        }
    }

    /** The conversation once no run is active or queued there (polled: the runs end by themselves). */
    private suspend fun idle(client: PhebyClient, conversationId: String): ConversationHistory {
        var history = client.openConversation(conversationId)
        while (history.run != null || history.queue.orEmpty().isNotEmpty()) {
            delay(50)
            history = client.openConversation(conversationId)
        }
        return history
    }

    /** The `seq` of a frame (resume connections only). */
    private fun seqOf(message: ServerMessage): Long? =
        PhebyJson.encodeToJsonElement(ServerMessage.serializer(), message).jsonObject["seq"]?.jsonPrimitive?.long

    @Test
    fun `after a drop the followed conversation resumes from its seq - the missed frames arrive once, in order, as an observer saw them`() =
        scenario { _, proxy, phone, observer ->
            val id = phone.createConversation("Resumed").conversationId
            phone.follow(id)
            checkRun(phone.chat(id, "before the drop").toList())
            val before = phone.position(id) ?: fail("a resume connection has a position after a run")
            val seen = Collections.synchronizedList(mutableListOf<ServerMessage>())
            launch(start = CoroutineStart.UNDISPATCHED) { phone.events.collect { seen += it } }
            val resyncs = Collections.synchronizedList(mutableListOf<Map<String, ConversationHistory>>())
            launch(start = CoroutineStart.UNDISPATCHED) { phone.resyncs.collect { resyncs += it } }

            proxy.pause()
            phone.state.first { it is ConnectionState.Reconnecting }
            val missed = observer.chat(id, "while the phone was away").toList()
            val missedRun = (missed.first() as RunAccepted).runId
            val resumed = async(start = CoroutineStart.UNDISPATCHED) { phone.events.firstOf<ConversationResumed> { it.conversationId == id } }
            val end = async(start = CoroutineStart.UNDISPATCHED) { phone.events.firstOf<RunFinished> { it.runId == missedRun } }
            proxy.resume()

            assertEquals(before, resumed.await().fromSeq, "resumed from the last seq the phone handled")
            val finished = end.await()
            assertEquals(RunStatus.COMPLETED, finished.status)

            val replay = seen.toList().dropWhile { it !is ConversationResumed }.drop(1).takeWhile { it !== finished } + finished
            // What an observer saw, without replies' request_ids, and with the deltas of a stretch collapsed into the latest.
            assertEquals(missed.filter { it !is MessageDelta }.map { it::class }, replay.filter { it !is MessageDelta }.map { it::class })
            assertEquals(missed.filterIsInstance<MessageComplete>().single().text, replay.filterIsInstance<MessageComplete>().single().text)
            assertTrue(replay.filterIsInstance<MessageDelta>().isNotEmpty(), "the draft is replayed too")
            // Once and in order: the conversation's events the phone saw only ever move forward.
            val seqs = seen.filter { it.requestId == null }.mapNotNull(::seqOf)
            assertEquals(seqs.sorted().distinct(), seqs, "no frame twice, none out of order")
            assertEquals(seqOf(finished), phone.position(id))
            assertTrue(resyncs.isNotEmpty() && resyncs.none { id in it }, "a resumed conversation needs no snapshot: $resyncs")
        }

    @Test
    fun `events that arrive while the phone catches up are held back - the replay brings them, once and in order`() =
        scenario { _, proxy, phone, observer ->
            // The conversation that streams is re-opened last, after many others, so live deltas arrive
            // between the reconnect's ready and its answer.
            repeat(200) { phone.follow(observer.createConversation("Quiet $it").conversationId) }
            val id = observer.createConversation("Streaming").conversationId
            phone.follow(id)
            phone.openConversation(id) // its position
            val seen = Collections.synchronizedList(mutableListOf<MessageDelta>())
            launch(start = CoroutineStart.UNDISPATCHED) { phone.events.collect { if (it is MessageDelta && it.conversationId == id) seen += it } }
            val streaming = CompletableDeferred<Unit>()
            val run = async { observer.chat(id, "/sim slow").onEach { if (it is MessageDelta) streaming.complete(Unit) }.toList() }
            streaming.await()
            proxy.pause()
            phone.state.first { it is ConnectionState.Reconnecting }
            proxy.resume()

            val final = checkRun(run.await())
            idle(phone, id)
            val seqs = seen.mapNotNull(::seqOf)
            assertEquals(seqs.sorted().distinct(), seqs, "no delta twice, none out of order")
            // Cumulative drafts that only grow, up to the answer: nothing lost either.
            assertTrue(seen.zipWithNext().all { (a, b) -> b.text.startsWith(a.text) }, "drafts only grow")
            assertTrue(final.startsWith(seen.last().text))
        }

    @Test
    fun `a chat whose reply was lost - the replay brings the run's first frames, and the retried send's answer does not start it twice`() =
        scenario { _, proxy, phone, observer ->
            val id = phone.createConversation("Lost chat reply").conversationId
            phone.openConversation(id) // its position, so the chat's conversation resumes
            val accepted = async(start = CoroutineStart.UNDISPATCHED) { observer.events.firstOf<RunAccepted> { it.conversationId == id } }
            val events = Collections.synchronizedList(mutableListOf<RunAccepted>())
            launch(start = CoroutineStart.UNDISPATCHED) { phone.events.collect { if (it is RunAccepted) events += it } }
            proxy.swallowReplies()
            val chat = async { phone.chat(id, "/sim slow").toList() }
            val run = accepted.await()
            proxy.cut()

            val frames = chat.await()
            assertEquals(listOf(run.runId), frames.filterIsInstance<RunAccepted>().map { it.runId }, "one run.accepted: $frames")
            assertEquals("word200", checkRun(frames).trim().substringAfterLast(' '))
            assertEquals(listOf(run.runId), events.map { it.runId }, "the app's events carry the run's start once too")
            assertEquals(1, idle(observer, id).messages.count { it.role == MessageRole.USER })
        }

    @Test
    fun `a server restart between the drop and the resume - the log survives it, and the interrupted run ends failed on the phone`() =
        scenario { server, proxy, phone, _ ->
            val id = phone.createConversation("Restarted").conversationId
            val streaming = CompletableDeferred<Unit>()
            val run = async { phone.chat(id, "/sim slow").onEach { if (it is MessageDelta) streaming.complete(Unit) }.toList() }
            streaming.await()
            proxy.pause()
            server.restart()
            proxy.resume()

            // The chat flow followed its conversation: the replay brings the end the restart gave the run.
            val frames = run.await()
            val end = assertInstanceOf(RunFinished::class.java, frames.last(), "the run's own end, not a snapshot")
            assertEquals(RunStatus.FAILED, end.status)
            assertFalse(frames.any { it is ConversationHistory }, "resumed, so no snapshot was needed")
            val draft = frames.filterIsInstance<MessageDelta>().last().text
            assertEquals(draft, frames.filterIsInstance<MessageComplete>().single { it.kind == null }.text, "the streamed text is the answer")

            // And the history the server kept matches what the phone showed (the observer may still be reconnecting).
            val history = phone.openConversation(id)
            assertEquals(listOf(MessageRole.USER, MessageRole.ASSISTANT), history.messages.map { it.role })
            assertEquals(draft, history.messages.last().text)
            checkRun(phone.chat(id, "after the restart").toList())
        }

    @Test
    fun `a conversation the log no longer reaches back to is re-opened as a snapshot (resumed false)`() =
        scenario(mapOf("PHEBY_REPLAY_MAX_EVENTS" to "3")) { _, proxy, phone, observer ->
            val id = phone.createConversation("Evicted").conversationId
            phone.follow(id)
            proxy.pause()
            phone.state.first { it is ConnectionState.Reconnecting }
            val snapshot = async(start = CoroutineStart.UNDISPATCHED) { phone.resyncs.first { id in it }.getValue(id) }
            checkRun(observer.chat(id, "more events than the log keeps").toList())
            proxy.resume()

            val history = snapshot.await()
            assertEquals(false, history.resumed)
            assertEquals(2, history.messages.size, "replace local state with it")
            assertEquals(history.seq, phone.position(id), "the snapshot's position replaces the old one")
        }

    @Test
    fun `a reply lost in a drop - the send goes again with its client_message_id, and the server answers its first run, never a second`() =
        scenario { _, proxy, phone, observer ->
            val id = phone.createConversation("Lost reply").conversationId
            val accepted = async(start = CoroutineStart.UNDISPATCHED) { observer.events.firstOf<RunAccepted> { it.conversationId == id } }
            val clientMessageId = newClientMessageId()
            proxy.swallowReplies()
            val sent = async { phone.sendMessage(id, "did this arrive?", clientMessageId = clientMessageId) }
            val run = accepted.await() // the server started it; the phone never heard
            proxy.cut()

            assertEquals(run.runId, sent.await().runId, "the retry got the first outcome")
            val history = idle(observer, id)
            assertEquals(1, history.messages.count { it.clientMessageId == clientMessageId }, "one user message: one run")
            assertEquals(2, history.messages.size)
        }

    @Test
    fun `sends made while disconnected wait in the send queue and go out in order once the connection is back, other requests fail at once`() =
        scenario { _, proxy, phone, observer ->
            val id = phone.createConversation("Offline").conversationId
            proxy.pause()
            phone.state.first { it is ConnectionState.Reconnecting }
            expectPheby(PhebyException.CONNECTION_CLOSED) { phone.ping() }
            val created = async(start = CoroutineStart.UNDISPATCHED) { phone.createConversation("made offline") }
            val first = async(start = CoroutineStart.UNDISPATCHED) { phone.queueMessage(id, "first") }
            val second = async(start = CoroutineStart.UNDISPATCHED) { phone.queueMessage(id, "second") }
            assertFalse(created.isCompleted || first.isCompleted || second.isCompleted, "they wait")
            proxy.resume()

            assertEquals("made offline", created.await().name)
            assertInstanceOf(SendResult.Started::class.java, first.await(), "sent in the order they were made")
            val queued = assertInstanceOf(SendResult.Queued::class.java, second.await())
            assertTrue(queued.runId != (first.await() as SendResult.Started).runId)
            assertEquals(listOf("first", "second"), idle(observer, id).messages.filter { it.role == MessageRole.USER }.map { it.text })
        }

    @Test
    fun `a server without resume - a send whose reply was lost fails instead of being repeated`() = blocking {
        PhebyServer(mapOf("PHEBY_RESUME" to "false")).start().use { server ->
            TcpProxy { server.port }.use { proxy ->
                phone(server, proxy).use { phone ->
                    phone.connect()
                    assertFalse(Features.RESUME in phone.features)
                    val id = phone.createConversation("No resume").conversationId
                    server.client().use { observer ->
                        val accepted = async(start = CoroutineStart.UNDISPATCHED) { observer.events.firstOf<RunAccepted> { it.conversationId == id } }
                        proxy.swallowReplies()
                        val sent = async { runCatching { phone.sendMessage(id, "maybe handled") }.exceptionOrNull() }
                        accepted.await()
                        proxy.cut()
                        assertEquals(PhebyException.CONNECTION_CLOSED, (sent.await() as PhebyException).code)
                    }
                }
            }
        }
    }
}
