package dev.pheby.client

import dev.pheby.protocol.ErrorCode
import dev.pheby.protocol.PairCreated
import dev.pheby.protocol.ToolEvent
import dev.pheby.protocol.ToolStatus
import dev.pheby.protocol.decodeServerMessage
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import java.io.File
import kotlin.random.Random
import kotlin.time.Duration
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds

/** The pure parts: backoff, the lockout wait, close codes, and what never leaks. */
class UnitsTest {
    @Test
    fun `backoff is full jitter under a ceiling that doubles from 500 ms to 30 s`() {
        val policy = ReconnectPolicy()
        val random = Random(42)
        for (attempt in 0..12) {
            val ceiling = minOf(30_000L, 500L shl attempt).milliseconds
            val delays = List(200) { policy.backoff(attempt, random) }
            assertTrue(delays.all { it >= Duration.ZERO && it <= ceiling }, "attempt $attempt: $ceiling")
            // Jitter: spread over the range, not a fixed value.
            assertTrue(delays.max() - delays.min() > ceiling / 2, "attempt $attempt is spread")
        }
        assertEquals(Duration.ZERO, policy.backoff(0, object : Random() {
            override fun nextBits(bitCount: Int) = 0
        }))
    }

    @Test
    fun `a lockout waits what the server said, else the fallback, other failures back off`() {
        val policy = ReconnectPolicy(lockedOutDelay = 42.seconds)
        val told = PhebyException("rate_limited", "locked", retryAfter = 7.seconds)
        assertEquals(7.seconds, policy.delayAfter(told, attempt = 9))
        assertEquals(42.seconds, policy.delayAfter(PhebyException("rate_limited", "locked"), attempt = 0))
        assertTrue(policy.delayAfter(PhebyException("connection_closed", "1006"), attempt = 0) <= 500.milliseconds)
    }

    @Test
    fun `retry after N s is read from a close reason or an error message`() {
        assertEquals(12.seconds, CloseCodes.retryAfter("retry after 12 s"))
        assertEquals(3.seconds, CloseCodes.retryAfter("Too many failed hellos from this address; retry after 3 s"))
        assertEquals(300.seconds, CloseCodes.retryAfter("Retry after 300 seconds"))
        assertEquals(1.seconds, CloseCodes.retryAfter("retry after 1s"))
        assertNull(CloseCodes.retryAfter("locked out"))
        assertNull(CloseCodes.retryAfter("retry after soon"))
        assertNull(CloseCodes.retryAfter(null))
    }

    @Test
    fun `close codes map to the failures the close-code table names`() {
        val error = PhebyException("rate_limited", "Too many failed hellos; retry after 9 s", retryAfter = 9.seconds)
        val locked = CloseCodes.failure(CloseCodes.LOCKED_OUT, "locked out", error)
        assertEquals("rate_limited", locked.code)
        assertEquals(9.seconds, locked.retryAfter, "the error frame's wait when the reason has none")
        assertEquals("Too many failed hellos; retry after 9 s", locked.message)
        assertEquals(4.seconds, CloseCodes.failure(CloseCodes.LOCKED_OUT, "retry after 4 s", null).retryAfter)
        assertTrue(CloseCodes.failure(CloseCodes.UNAUTHORIZED, "unauthorized", null).isFinal)
        assertTrue(CloseCodes.failure(CloseCodes.VERSION_MISMATCH, "", null).isFinal)
        for (transient in listOf(CloseCodes.GOING_AWAY, CloseCodes.ABNORMAL, CloseCodes.MESSAGE_TOO_BIG, CloseCodes.AUTH_TIMEOUT, CloseCodes.SLOW_CONSUMER)) {
            assertFalse(CloseCodes.failure(transient, "", null).isFinal, "$transient")
        }
        assertEquals("auth_timeout", CloseCodes.failure(CloseCodes.AUTH_TIMEOUT, "", null).code)
        assertEquals(ErrorCode.RATE_LIMITED, locked.errorCode)
        assertEquals(ErrorCode.of("timeout"), PhebyException(PhebyException.TIMEOUT, "t").errorCode)
    }

    @Test
    fun `a pairing URI is parsed with its percent-encoded URL, and anything else is refused`() {
        val fixture = File(repoRoot, "packages/protocol/fixtures/valid/server/pair.created.json").readText()
        val created = decodeServerMessage(fixture) as PairCreated
        assertEquals(PairingUri("wss://pheby.example.com/ws", created.code), PairingUri.parse(created.uri))
        val code = "Qx7pZ2mK9vR4tW8yB3nD6f"
        // A URL with its own query and a path prefix survives the encoding; only the first value of a name counts.
        assertEquals(
            PairingUri("wss://h.example/pheby/ws?a=1&b=2", code),
            PairingUri.parse("pheby://pair?url=wss%3A%2F%2Fh.example%2Fpheby%2Fws%3Fa%3D1%26b%3D2&code=$code&code=other"),
        )
        assertEquals(PairingUri("ws://127.0.0.1:8620/ws", code), PairingUri.parse(" pheby://pair?code=$code&url=ws%3A%2F%2F127.0.0.1%3A8620%2Fws\n"))
        for (bad in listOf(
            "https://pheby.example.com/ws",
            "pheby://other?url=wss%3A%2F%2Fh%2Fws&code=$code",
            "pheby://pair?url=https%3A%2F%2Fh%2Fws&code=$code",
            "pheby://pair?url=wss%3A%2F%2Fh%2Fws",
            "pheby://pair?url=wss%3A%2F%2Fh%2Fws&code=short",
            "pheby://pair?url=wss%3A%2F%2Fh%2Fws&code=${code}%2F",
            "not a uri at all",
        )) {
            assertThrows<IllegalArgumentException>(bad) { PairingUri.parse(bad) }
            assertNull(PairingUri.parseOrNull(bad), bad)
        }
        assertFalse(code in PairingUri("wss://h/ws", code).toString())
    }

    @Test
    fun `the client asks for append deltas, push, resume, queue, activity, modes, inbox, workspaces and changes by default, as @pheby-client does`() {
        assertEquals(
            setOf(Features.DELTA_APPEND, Features.PUSH, Features.RESUME, Features.QUEUE, Features.ACTIVITY, Features.MODES, Features.INBOX, Features.WORKSPACES, Features.CHANGES),
            PhebyClientOptions(url = "ws://h/ws", secret = "s").features,
        )
        assertEquals(PhebyClientOptions(url = "ws://h/ws", secret = "s").features, Features.DEFAULTS)
        assertFalse(Features.THOUGHTS in Features.DEFAULTS, "thoughts can be the bulk of a run's bytes: opt-in")
    }

    @Test
    fun `a tool event without content keeps the call's last content, one with content replaces it`() {
        val fixtures = File(repoRoot, "packages/protocol/fixtures/valid/server")
        val edit = decodeServerMessage(File(fixtures, "tool.event.activity-edit.json").readText()) as ToolEvent
        val done = edit.copy(status = ToolStatus.COMPLETED, content = null)
        assertEquals(edit.content, done.withContentOf(edit).content, "unchanged, so not repeated")
        assertEquals(ToolStatus.COMPLETED, done.withContentOf(edit).status)
        val output = decodeServerMessage(File(fixtures, "tool.event.activity-output.json").readText()) as ToolEvent
        val replaced = output.copy(toolCallId = edit.toolCallId)
        assertEquals(output.content, replaced.withContentOf(edit).content, "a new list replaces the old one")
        assertNull(output.copy(content = null).withContentOf(edit).content, "another call's content is not taken")
        assertEquals(done, done.withContentOf(null))
    }

    @Test
    fun `a slash command is the command's name after one slash, then its input`() {
        assertEquals("/compact", slashCommand("compact"))
        assertEquals("/compact", slashCommand("/compact", "  "))
        assertEquals("/review src/app.ts", slashCommand("review", "src/app.ts"))
    }

    @Test
    fun `the options never print the secret`() {
        val text = PhebyClientOptions(url = "ws://127.0.0.1:1/ws", secret = "hunter2-hunter2-hunter2").toString()
        assertFalse(text.contains("hunter2"), text)
    }
}
