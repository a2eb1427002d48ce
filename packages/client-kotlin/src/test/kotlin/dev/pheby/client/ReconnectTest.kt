package dev.pheby.client

import dev.pheby.protocol.ApprovalChoice
import dev.pheby.protocol.ConversationHistory
import dev.pheby.protocol.ConversationResumed
import dev.pheby.protocol.MessageDelta
import dev.pheby.protocol.MessageRole
import dev.pheby.protocol.RunFinished
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.async
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.flow.onEach
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.launch
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.fail
import java.util.Collections
import kotlin.time.Duration
import kotlin.time.Duration.Companion.seconds

/** Drops, restarts, a wrong secret and a lockout, against the real server: what the close-code table says. */
class ReconnectTest {
    @Test
    fun `without resume, a server restart mid-run - the client reconnects, re-opens what it follows as a snapshot, and the app's view recovers`() = blocking {
        PhebyServer().start().use { server ->
            // v1's recovery (ResumeTest covers the same with resume): no resume, so the re-open is a snapshot.
            server.client { copy(features = setOf(Features.DELTA_APPEND)) }.use { client ->
                val states = Collections.synchronizedList(mutableListOf<ConnectionState>())
                launch(start = CoroutineStart.UNDISPATCHED) { client.state.collect { states += it } }
                val id = client.createConversation("Survives restarts").conversationId
                val first = checkRun(client.chat(id, "Before the restart").toList())
                client.follow(id)
                val resynced = async(start = CoroutineStart.UNDISPATCHED) { client.resyncs.first() }

                // A long run, and the server restarts while it streams.
                val streaming = CompletableDeferred<Unit>()
                val run = async { client.chat(id, "/sim slow").onEach { if (it is MessageDelta) streaming.complete(Unit) }.toList() }
                streaming.await()
                server.restart()

                // The run's flow ends with what the new connection knows: the run is no longer active.
                val frames = run.await()
                val end = frames.last()
                assertTrue(end is RunFinished || (end is ConversationHistory && end.run == null), "the run's flow ends: $end")

                // Reconnected after a going-away close, with backoff; the followed conversation was re-opened.
                val snapshot = resynced.await().getValue(id)
                // (state is a StateFlow: a collector may miss short-lived states, so only "it reconnected" is asserted.)
                assertTrue(states.any { it is ConnectionState.Reconnecting }, "$states")
                assertTrue(client.state.value is ConnectionState.Open)
                assertNull(snapshot.run, "the restart ended the run")
                assertEquals(listOf("Before the restart", first, "/sim slow"), snapshot.messages.take(3).map { it.text })
                assertEquals(MessageRole.USER, snapshot.messages[2].role)

                // And the app carries on.
                checkRun(client.chat(id, "After the restart").toList())
            }
        }
    }

    @Test
    fun `a wrong secret is final - connect throws unauthorized and nothing is retried, also after a restart with a new secret`() = blocking {
        PhebyServer().start().use { server ->
            val wrong = PhebyClient(PhebyClientOptions(url = server.url, secret = "the-wrong-secret-0123456789"))
            wrong.use {
                val e = expectPheby("unauthorized") { it.connect() }
                assertEquals("Invalid secret", e.message)
                assertTrue(e.isFinal)
                assertEquals(ConnectionState.Failed(e), it.state.value)
            }
            // The log is read on another thread: wait until the refusal has been read before counting.
            server.awaitLog("rejected: wrong secret")
            assertEquals(1, server.count("rejected: wrong secret"))

            // Connected, then the operator changes the secret: the reconnect is refused once, for good.
            server.client().use { client ->
                val logged = server.log.size
                server.restart(mapOf("PHEBY_SECRET" to "the-operator-rotated-the-secret"))
                val failed = client.state.first { it is ConnectionState.Failed } as ConnectionState.Failed
                assertEquals("unauthorized", failed.error.code)
                // No retry loop: it ended before Failed was published, after exactly one more refusal.
                assertFalse(client.reconnecting)
                server.awaitLog("rejected: wrong secret", from = logged)
                assertEquals(2, server.count("rejected: wrong secret"))
                assertEquals(failed, client.state.value)
            }
        }
    }

    @Test
    fun `a lockout - the client waits the seconds the server names instead of hammering, then reconnects`() = blocking {
        // Two failures lock the address for 4 s (long enough for a loaded machine to reconnect within it); the
        // client's fallback wait, for a server that names no "retry after", is 5 s, which this server never needs.
        val env = mapOf("PHEBY_LOCKOUT_MAX_FAILURES" to "2", "PHEBY_LOCKOUT_DURATION_SECONDS" to "4")
        PhebyServer(env).start().use { server ->
            val policy = ReconnectPolicy(lockedOutDelay = 5.seconds)
            server.client { copy(reconnect = policy) }.use { client ->
                val states = Collections.synchronizedList(mutableListOf<ConnectionState>())
                launch(start = CoroutineStart.UNDISPATCHED) { client.state.collect { states += it } }
                val id = client.createConversation("Locked out").conversationId
                client.follow(id)
                // Two wrong secrets from 127.0.0.1 lock the address (the server logs the lock on the second).
                repeat(2) {
                    PhebyClient(PhebyClientOptions(url = server.url, secret = "guessing-the-secret-$it-0000")).use { guess ->
                        expectPheby("unauthorized") { guess.connect() }
                    }
                }
                // The phone changes networks: the client reconnects at once and meets the lockout.
                val resumed = async(start = CoroutineStart.UNDISPATCHED) { client.events.firstOf<ConversationResumed> { it.conversationId == id } }
                client.reconnect()
                assertEquals(client.position(id), resumed.await().fromSeq, "the followed conversation was resumed where it was")

                val locked = states.filterIsInstance<ConnectionState.Reconnecting>().single { it.cause.code == "rate_limited" }
                val told = locked.cause.retryAfter ?: fail("the server names the wait: ${locked.cause.message}")
                assertTrue(told > Duration.ZERO && told <= 4.seconds, "$told")
                assertEquals(told, locked.delay, "it waits what the server said")
                // One refused connection (the server may log it twice: when it opens and at its hello), then a wait past the lockout.
                // The log is read on another thread: wait until the refusal has been read before counting.
                server.awaitLog("refused: address locked out")
                assertEquals(1, server.connections("refused: address locked out"), "${server.log.filter { "refused" in it }} $states")
                assertTrue(client.state.value is ConnectionState.Open)
            }
        }
    }

    @Test
    fun `a locked-out address - connect and the HTTP routes say how long to wait, and the lockout is not final`() = blocking {
        val env = mapOf("PHEBY_LOCKOUT_MAX_FAILURES" to "1", "PHEBY_LOCKOUT_DURATION_SECONDS" to "600")
        PhebyServer(env).start().use { server ->
            PhebyClient(PhebyClientOptions(url = server.url, secret = "guessing-the-secret-0000")).use { guess ->
                expectPheby("unauthorized") { guess.connect() }
            }
            PhebyClient(PhebyClientOptions(url = server.url, secret = server.secret)).use { client ->
                val refused = expectPheby("rate_limited") { client.connect() }
                val wait = refused.retryAfter ?: fail("no wait in ${refused.message}")
                assertTrue(wait > 590.seconds && wait <= 600.seconds, "$wait")
                assertFalse(refused.isFinal)
                val state = client.state.value
                assertTrue(state is ConnectionState.Closed && state.error?.code == "rate_limited", "not Failed: connect() again after the wait: $state")

                // The HTTP routes: 429, the wait in the message and in Retry-After.
                val http = expectPheby("rate_limited") { client.answerApproval("any", ApprovalChoice.ONCE) }
                assertEquals(429, http.status)
                assertTrue(http.retryAfter?.let { it in 590.seconds..600.seconds } == true, "${http.retryAfter}")
                val upload = expectPheby("rate_limited") { client.upload("any", "a.txt", "a".byteInputStream(), 1) }
                assertEquals(429, upload.status)
                assertTrue(upload.retryAfter != null, upload.message)
            }
        }
    }
}
