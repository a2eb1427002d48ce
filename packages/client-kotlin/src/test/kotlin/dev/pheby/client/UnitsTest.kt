package dev.pheby.client

import dev.pheby.protocol.ErrorCode
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
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
    fun `the options never print the secret`() {
        val text = PhebyClientOptions(url = "ws://127.0.0.1:1/ws", secret = "hunter2-hunter2-hunter2").toString()
        assertFalse(text.contains("hunter2"), text)
    }
}
