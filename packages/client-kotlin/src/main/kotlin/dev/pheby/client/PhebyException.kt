package dev.pheby.client

import dev.pheby.protocol.ErrorCode
import kotlinx.coroutines.CopyableThrowable
import kotlinx.coroutines.ExperimentalCoroutinesApi
import kotlin.time.Duration

/**
 * A failure with a machine-readable [code]: requests, [PhebyClient.connect] and file transfers throw it.
 *
 * [code] is the protocol's error code (the `error.code` of an `error` reply, or of an HTTP error body),
 * or one of the client's own: [CONNECTION_CLOSED], [TIMEOUT], [INVALID_FRAME]. Compare it as a string
 * or through [errorCode]:
 *
 * ```kotlin
 * catch (e: PhebyException) { if (e.errorCode == ErrorCode.RUN_ACTIVE) … }
 * ```
 */
@OptIn(ExperimentalCoroutinesApi::class) // CopyableThrowable: keeps every field when coroutines copy the exception
class PhebyException(
    /** The protocol's error code, or [CONNECTION_CLOSED], [TIMEOUT] or [INVALID_FRAME]. */
    val code: String,
    message: String,
    /** The `request_id` of the request this answers, when it answers one. */
    val requestId: String? = null,
    /** The HTTP status of a failed upload or download, or of a refused WebSocket upgrade. */
    val status: Int? = null,
    /** The WebSocket close code that ended the connection, when that is what failed. */
    val closeCode: Int? = null,
    /**
     * How long to wait before trying again, for `rate_limited` (a locked-out address): the seconds the
     * server named ("retry after N s"), or null when it named none.
     */
    val retryAfter: Duration? = null,
    cause: Throwable? = null,
) : Exception(message, cause), CopyableThrowable<PhebyException> {
    /** [code] as the protocol's [ErrorCode]; the client's own codes are [ErrorCode.Unknown]s. */
    val errorCode: ErrorCode get() = ErrorCode.of(code)

    /** True for the failures that retrying cannot fix: a wrong secret (`unauthorized`) and `version_mismatch`. */
    val isFinal: Boolean get() = code in FINAL_CODES

    override fun createCopy(): PhebyException =
        PhebyException(code, message ?: "", requestId, status, closeCode, retryAfter, this)

    companion object {
        /** The connection closed (or could not be opened) before a reply arrived. */
        const val CONNECTION_CLOSED: String = "connection_closed"

        /** No reply within the request's timeout. */
        const val TIMEOUT: String = "timeout"

        /** The server sent something the protocol does not allow (e.g. a reply that does not decode). */
        const val INVALID_FRAME: String = "invalid_frame"

        private val FINAL_CODES = setOf(ErrorCode.UNAUTHORIZED.value, ErrorCode.VERSION_MISMATCH.value)
    }
}
