package dev.pheby.client

import dev.pheby.protocol.ErrorCode
import kotlin.time.Duration
import kotlin.time.Duration.Companion.seconds

/**
 * The WebSocket close codes of Pheby Protocol v1 (docs/protocol.md, "Handshake and close codes"), and
 * what the client does after each. The values equal `CLOSE_CODES` of `@pheby/protocol` (a test checks).
 */
object CloseCodes {
    /** Normal close. */
    const val NORMAL: Int = 1000

    /** Server shutting down: reconnect with backoff. */
    const val GOING_AWAY: Int = 1001

    /** No close frame (the connection broke): reconnect with backoff. */
    const val ABNORMAL: Int = 1006

    /** A frame over 2 MiB (after `too_large`): reconnect with backoff. */
    const val MESSAGE_TOO_BIG: Int = 1009

    /** Wrong secret, or a non-`hello` first frame: final, never retried. */
    const val UNAUTHORIZED: Int = 4401

    /** No `hello` within the auth timeout: reconnect with backoff. */
    const val AUTH_TIMEOUT: Int = 4408

    /** Unsupported `protocol_version`: final, never retried. */
    const val VERSION_MISMATCH: Int = 4426

    /** The source address is locked out: wait the seconds the reason gives, then reconnect. */
    const val LOCKED_OUT: Int = 4429

    /** The client read too slowly: reconnect with backoff. */
    const val SLOW_CONSUMER: Int = 4503

    /**
     * The wait a `rate_limited` close reason or error message names: "retry after N s" (any case, `s`,
     * `sec`, `second(s)`), or null when it names none.
     */
    fun retryAfter(text: String?): Duration? {
        val match = text?.let(RETRY_AFTER::find) ?: return null
        return match.groupValues[1].toLongOrNull()?.seconds
    }

    /** The failure a close of an authenticated or authenticating connection stands for. */
    internal fun failure(code: Int, reason: String, error: PhebyException?): PhebyException {
        val errorCode = when (code) {
            UNAUTHORIZED -> ErrorCode.UNAUTHORIZED.value
            VERSION_MISMATCH -> ErrorCode.VERSION_MISMATCH.value
            LOCKED_OUT -> ErrorCode.RATE_LIMITED.value
            AUTH_TIMEOUT -> ErrorCode.AUTH_TIMEOUT.value
            else -> PhebyException.CONNECTION_CLOSED
        }
        // The error frame sent before the close says more than the close reason; keep its message.
        val message = error?.takeIf { it.code == errorCode }?.message
            ?: "the server closed the connection ($code${if (reason.isEmpty()) "" else ": $reason"})"
        val retryAfter = if (code == LOCKED_OUT) retryAfter(reason) ?: error?.retryAfter else null
        return PhebyException(errorCode, message, closeCode = code, retryAfter = retryAfter)
    }

    private val RETRY_AFTER = Regex("""retry after (\d+) ?(?:s|sec|secs|seconds?)\b""", RegexOption.IGNORE_CASE)
}
