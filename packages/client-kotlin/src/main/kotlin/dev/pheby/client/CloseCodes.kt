package dev.pheby.client

import dev.pheby.protocol.ErrorCode
import dev.pheby.protocol.CloseCodes as Protocol
import kotlin.time.Duration
import kotlin.time.Duration.Companion.seconds

/**
 * The WebSocket close codes of Pheby Protocol v1 (docs/protocol.md, "Handshake and close codes"), and
 * what the client does after each. The values are the generated [dev.pheby.protocol.CloseCodes] (from
 * `@pheby/protocol`'s `schema/meta.json`), plus [ABNORMAL], which no server sends.
 */
object CloseCodes {
    /** Normal close. */
    const val NORMAL: Int = Protocol.NORMAL

    /** Server shutting down: reconnect with backoff. */
    const val GOING_AWAY: Int = Protocol.GOING_AWAY

    /** No close frame (the connection broke): reconnect with backoff. The WebSocket library reports it, never a server. */
    const val ABNORMAL: Int = 1006

    /** A frame over 2 MiB (after `too_large`): reconnect with backoff. */
    const val MESSAGE_TOO_BIG: Int = Protocol.MESSAGE_TOO_BIG

    /** Wrong secret, or a non-`hello` first frame: final, never retried. */
    const val UNAUTHORIZED: Int = Protocol.UNAUTHORIZED

    /** No `hello` within the auth timeout: reconnect with backoff. */
    const val AUTH_TIMEOUT: Int = Protocol.AUTH_TIMEOUT

    /** Unsupported `protocol_version`: final, never retried. */
    const val VERSION_MISMATCH: Int = Protocol.VERSION_MISMATCH

    /** The source address is locked out: wait the seconds the reason gives, then reconnect. */
    const val LOCKED_OUT: Int = Protocol.LOCKED_OUT

    /** The client read too slowly: reconnect with backoff. */
    const val SLOW_CONSUMER: Int = Protocol.SLOW_CONSUMER

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
