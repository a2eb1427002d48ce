package dev.pheby.client

import dev.pheby.protocol.MessageComplete
import dev.pheby.protocol.MessageDelta
import dev.pheby.protocol.RunAccepted
import dev.pheby.protocol.RunFinished
import dev.pheby.protocol.RunStatus
import dev.pheby.protocol.ServerMessage
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.cancelChildren
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.junit.jupiter.api.AfterAll
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertInstanceOf
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.TestInstance
import org.junit.jupiter.api.assertThrows
import kotlin.time.Duration.Companion.seconds

/**
 * A test body in a coroutine, bounded so a hang fails the test instead of the build. Background
 * collectors it launched (e.g. of [PhebyClient.state]) are cancelled when the body returns.
 */
fun blocking(block: suspend CoroutineScope.() -> Unit) = runBlocking {
    withTimeout(120.seconds) {
        block()
        coroutineContext.cancelChildren()
    }
}

/** A connected client of [server] (close it). */
suspend fun PhebyServer.client(options: PhebyClientOptions.() -> PhebyClientOptions = { this }): PhebyClient =
    PhebyClient(PhebyClientOptions(url = url, secret = secret).options()).also { it.connect() }

/** The first value of this flow that is a [T] matching [predicate]. */
suspend inline fun <reified T : Any> Flow<Any>.firstOf(crossinline predicate: (T) -> Boolean = { true }): T =
    first { it is T && predicate(it) } as T

/** Expects [block] to throw a [PhebyException] with [code], and returns it. */
inline fun expectPheby(code: String, block: () -> Unit): PhebyException {
    val e = assertThrows<PhebyException> { block() }
    assertEquals(code, e.code, e.message)
    return e
}

/**
 * Checks one run's frames as [PhebyClient.chat] emitted them against the protocol's state machine:
 * run.accepted first, run.finished (with [status]) last and once, message.start before any message,
 * each message.delta extending the previous draft (cumulative, so stitched), and the final text
 * extending the last draft. Returns the final text (of the run's message, notices aside).
 */
fun checkRun(frames: List<ServerMessage>, status: RunStatus = RunStatus.COMPLETED): String {
    assertInstanceOf(RunAccepted::class.java, frames.first())
    val finished = assertInstanceOf(RunFinished::class.java, frames.last())
    assertEquals(status, finished.status, "run.finished: $finished")
    assertEquals(1, frames.count { it is RunFinished })
    // message.start opens the run's message; only attachment.added of the sent files may come before it.
    val start = frames.indexOfFirst { it is dev.pheby.protocol.MessageStart }
    assertTrue(start > 0 && frames.subList(1, start).all { it is dev.pheby.protocol.AttachmentAdded }, "message.start follows run.accepted: $frames")
    var draft = ""
    var final: String? = null
    for (frame in frames) {
        when (frame) {
            is MessageDelta -> {
                assertTrue(frame.offset == null, "the app sees cumulative deltas")
                assertTrue(frame.text.startsWith(draft), "a delta does not extend the draft")
                assertTrue(final == null, "a delta after message.complete")
                draft = frame.text
            }
            is MessageComplete -> if (frame.kind == null) final = frame.text
            else -> Unit
        }
    }
    val text = final ?: draft
    assertTrue(text.startsWith(draft), "message.complete does not extend the streamed draft")
    return text
}

/** A test class with one server (started once for the class, with [env] on top of the defaults) and one connected client of it. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class ServerTest(env: Map<String, String> = emptyMap()) {
    protected val server = PhebyServer(env).start()
    protected val client = runBlocking { server.client() }

    /** A new conversation of [client]. */
    protected suspend fun newConversation(name: String = "Kotlin test"): String = client.createConversation(name).conversationId

    @AfterAll
    fun stop() {
        client.close()
        server.close()
    }
}
