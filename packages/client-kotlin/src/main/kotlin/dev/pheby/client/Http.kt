package dev.pheby.client

import dev.pheby.protocol.ErrorBody
import dev.pheby.protocol.ErrorCode
import dev.pheby.protocol.PhebyJson
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.suspendCancellableCoroutine
import kotlinx.coroutines.withContext
import kotlinx.serialization.KSerializer
import okhttp3.Call
import okhttp3.Callback
import okhttp3.HttpUrl
import okhttp3.HttpUrl.Companion.toHttpUrl
import okhttp3.MediaType.Companion.toMediaType
import okhttp3.OkHttpClient
import okhttp3.Request
import okhttp3.RequestBody.Companion.toRequestBody
import okhttp3.Response
import java.io.IOException
import kotlin.coroutines.resume
import kotlin.coroutines.resumeWithException
import kotlin.time.Duration.Companion.seconds

/**
 * The HTTP routes next to the WebSocket URL (attachments, answers from a notification), authenticated
 * with the secret as `Authorization: Bearer`, with the protocol's error bodies turned into [PhebyException]s.
 */
internal class HttpRoutes(val http: OkHttpClient, url: String, private val secret: String) {
    /** The HTTP base next to the WebSocket URL: ws(s) → http(s), a trailing `/ws` dropped, a path prefix kept. */
    private val base: HttpUrl = httpScheme(url).toHttpUrl().let { ws ->
        ws.newBuilder().encodedPath(ws.encodedPath.removeSuffix("/").removeSuffix("/ws").ifEmpty { "/" })
            .query(null).fragment(null).build()
    }

    /** A URL under the base. */
    fun url(build: HttpUrl.Builder.() -> Unit): HttpUrl = base.newBuilder().apply(build).build()

    fun Request.Builder.authorized(): Request.Builder = header("Authorization", "Bearer $secret")

    /**
     * POSTs [body] as JSON to the path [segments] and decodes the 200 answer with [response]; any other
     * status is thrown as the error body's [PhebyException].
     */
    suspend fun <T> postJson(segments: List<String>, body: String, response: KSerializer<T>): T {
        val url = url { segments.forEach(::addPathSegment) }
        val request = Request.Builder().url(url).post(body.toRequestBody(JSON)).authorized().build()
        return http.newCall(request).await().use {
            if (it.code != 200) throw httpError(it)
            decode(it, response)
        }
    }

    /** The body of a successful [response] as [serializer] says, read off the caller's thread. */
    suspend fun <T> decode(response: Response, serializer: KSerializer<T>): T {
        val text = withContext(Dispatchers.IO) { response.body.string() }
        return try {
            PhebyJson.decodeFromString(serializer, text)
        } catch (e: IllegalArgumentException) {
            throw PhebyException(PhebyException.INVALID_FRAME, "the HTTP ${response.code} body does not match the protocol", status = response.code, cause = e)
        }
    }

    /**
     * A failed request as a [PhebyException]: the error body's code and message (else a code derived
     * from the status), and for a 429 the wait: `retry after N s` in the message, else `Retry-After`.
     * The body is read off the caller's thread, as in [decode] (blocking I/O; Android's main thread forbids it).
     */
    suspend fun httpError(response: Response): PhebyException {
        val status = response.code
        val body = try {
            val text = withContext(Dispatchers.IO) { response.body.string() }
            PhebyJson.decodeFromString(ErrorBody.serializer(), text).error
        } catch (e: IllegalArgumentException) {
            null
        } catch (e: IOException) {
            null
        }
        val code = body?.code?.value ?: when (status) {
            401 -> ErrorCode.UNAUTHORIZED.value
            404 -> ErrorCode.NOT_FOUND.value
            413 -> ErrorCode.TOO_LARGE.value
            429 -> ErrorCode.RATE_LIMITED.value
            else -> ErrorCode.BAD_REQUEST.value
        }
        val retryAfter = CloseCodes.retryAfter(body?.message) ?: response.header("Retry-After")?.trim()?.toLongOrNull()?.seconds
        return PhebyException(code, body?.message ?: "HTTP $status", status = status, retryAfter = retryAfter)
    }

    private companion object {
        val JSON = "application/json".toMediaType()

        /** ws: → http:, wss: → https: (as OkHttp's Request.Builder does for WebSocket URLs). */
        fun httpScheme(url: String): String = when {
            url.startsWith("ws:", ignoreCase = true) -> "http:" + url.substring(3)
            url.startsWith("wss:", ignoreCase = true) -> "https:" + url.substring(4)
            else -> url
        }
    }
}

/** Enqueues the call and suspends until its response; cancelling the coroutine cancels the call. */
internal suspend fun Call.await(): Response = suspendCancellableCoroutine { continuation ->
    continuation.invokeOnCancellation { cancel() }
    enqueue(
        object : Callback {
            override fun onResponse(call: Call, response: Response) {
                continuation.resume(response) { _, value, _ -> value.close() }
            }

            override fun onFailure(call: Call, e: IOException) {
                if (continuation.isCancelled) return
                continuation.resumeWithException(
                    PhebyException(PhebyException.CONNECTION_CLOSED, "cannot reach ${call.request().url.host}: ${e.message}", cause = e),
                )
            }
        },
    )
}
