package dev.pheby.client

import dev.pheby.protocol.AttachmentDescriptor
import dev.pheby.protocol.ErrorBody
import dev.pheby.protocol.PhebyJson
import dev.pheby.protocol.UploadResponse
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.ensureActive
import kotlinx.coroutines.launch
import kotlinx.coroutines.suspendCancellableCoroutine
import kotlinx.coroutines.withContext
import okhttp3.Call
import okhttp3.Callback
import okhttp3.HttpUrl
import okhttp3.HttpUrl.Companion.toHttpUrl
import okhttp3.MediaType
import okhttp3.MediaType.Companion.toMediaTypeOrNull
import okhttp3.OkHttpClient
import okhttp3.Request
import okhttp3.RequestBody
import okhttp3.Response
import okio.BufferedSink
import java.io.ByteArrayOutputStream
import java.io.IOException
import java.io.InputStream
import java.io.OutputStream
import kotlin.coroutines.resume
import kotlin.coroutines.resumeWithException

/** Progress of a transfer: bytes so far, and the total when known. Called on an I/O thread. */
fun interface ProgressListener {
    /** [transferred] bytes so far of [total] (null when the length is unknown). */
    fun onProgress(transferred: Long, total: Long?)
}

/**
 * What a download received.
 *
 * @property status 200 for the whole file, 206 for a range.
 * @property contentType The stored MIME type (`Content-Type`).
 * @property contentRange The `Content-Range` of a 206, e.g. `bytes 0-99/48213`.
 * @property filename The file's name from `Content-Disposition` (its exact UTF-8 name), if any.
 * @property size Bytes written to the destination.
 */
data class Download(
    val status: Int,
    val contentType: String?,
    val contentRange: String?,
    val filename: String?,
    val size: Long,
)

/** `POST /attachments` and `GET /attachments/{id}`, authenticated with the secret (docs/protocol.md, "Attachments"). */
internal class Attachments(private val http: OkHttpClient, url: String, private val secret: String) {
    /** The HTTP base next to the WebSocket URL: ws(s) → http(s), a trailing `/ws` dropped, a path prefix kept. */
    private val base: HttpUrl = httpScheme(url).toHttpUrl().let { ws ->
        ws.newBuilder().encodedPath(ws.encodedPath.removeSuffix("/").removeSuffix("/ws").ifEmpty { "/" })
            .query(null).fragment(null).build()
    }

    suspend fun upload(
        conversationId: String,
        filename: String,
        content: InputStream,
        contentLength: Long?,
        contentType: String,
        onProgress: ProgressListener?,
    ): AttachmentDescriptor {
        val url = base.newBuilder().addPathSegment("attachments")
            .addQueryParameter("conversation_id", conversationId)
            .addQueryParameter("filename", filename).build()
        val body = StreamBody(content, contentLength, contentType.toMediaTypeOrNull(), onProgress)
        val response = send(Request.Builder().url(url).post(body).authorized().build())
        return response.use {
            if (it.code != 201) throw httpError(it)
            val text = withContext(Dispatchers.IO) { it.body.string() }
            try {
                PhebyJson.decodeFromString(UploadResponse.serializer(), text).attachment
            } catch (e: IllegalArgumentException) {
                throw PhebyException(PhebyException.INVALID_FRAME, "the upload response does not match the protocol", status = it.code, cause = e)
            }
        }
    }

    suspend fun download(downloadPath: String, to: OutputStream, range: String?, onProgress: ProgressListener?): Download {
        val url = base.newBuilder().addEncodedPathSegments(downloadPath.removePrefix("/")).build()
        val request = Request.Builder().url(url).authorized()
            .apply { range?.let { header("Range", if (it.startsWith("bytes=")) it else "bytes=$it") } }
            .build()
        val call = http.newCall(request)
        val response = call.await()
        return response.use {
            if (it.code != 200 && it.code != 206) throw httpError(it)
            val total = it.body.contentLength().takeIf { length -> length >= 0 }
            val size = copyCancellably(call, it.body.byteStream(), to, total, onProgress)
            Download(it.code, it.header("Content-Type"), it.header("Content-Range"), filenameOf(it.header("Content-Disposition")), size)
        }
    }

    private fun Request.Builder.authorized() = header("Authorization", "Bearer $secret")

    private suspend fun send(request: Request): Response = http.newCall(request).await()

    /** Reads [input] into [output] on an I/O thread; a cancelled coroutine cancels [call], which ends a blocked read. */
    private suspend fun copyCancellably(call: Call, input: InputStream, output: OutputStream, total: Long?, onProgress: ProgressListener?): Long =
        coroutineScope {
            var done = false
            val canceller = launch {
                try {
                    awaitCancellation()
                } finally {
                    if (!done) call.cancel()
                }
            }
            try {
                withContext(Dispatchers.IO) {
                    val buffer = ByteArray(BUFFER_BYTES)
                    var copied = 0L
                    while (true) {
                        ensureActive()
                        val n = input.read(buffer)
                        if (n < 0) break
                        output.write(buffer, 0, n)
                        copied += n
                        onProgress?.onProgress(copied, total)
                    }
                    copied
                }
            } finally {
                done = true
                canceller.cancel()
            }
        }

    /** A failed transfer as a [PhebyException]: the error body's code and message, else one derived from the status. */
    private fun httpError(response: Response): PhebyException {
        val status = response.code
        val body = try {
            PhebyJson.decodeFromString(ErrorBody.serializer(), response.body.string()).error
        } catch (e: IllegalArgumentException) {
            null
        } catch (e: IOException) {
            null
        }
        val code = body?.code?.value ?: when (status) {
            401 -> "unauthorized"
            404 -> "not_found"
            413 -> "too_large"
            429 -> "rate_limited"
            else -> "bad_request"
        }
        return PhebyException(code, body?.message ?: "HTTP $status", status = status, retryAfter = CloseCodes.retryAfter(body?.message))
    }

    /** The request body of an upload: [content] streamed in chunks (never buffered whole), counting progress. */
    private class StreamBody(
        private val content: InputStream,
        private val length: Long?,
        private val type: MediaType?,
        private val onProgress: ProgressListener?,
    ) : RequestBody() {
        override fun contentType(): MediaType? = type

        override fun contentLength(): Long = length ?: -1L // unknown: chunked

        override fun isOneShot(): Boolean = true // a stream cannot be replayed

        override fun writeTo(sink: BufferedSink) {
            val buffer = ByteArray(BUFFER_BYTES)
            var sent = 0L
            while (true) {
                val n = content.read(buffer)
                if (n < 0) break
                sink.write(buffer, 0, n)
                sent += n
                onProgress?.onProgress(sent, length)
            }
        }
    }

    private companion object {
        const val BUFFER_BYTES = 64 * 1024

        /** ws: → http:, wss: → https: (as OkHttp's Request.Builder does for WebSocket URLs). */
        fun httpScheme(url: String): String = when {
            url.startsWith("ws:", ignoreCase = true) -> "http:" + url.substring(3)
            url.startsWith("wss:", ignoreCase = true) -> "https:" + url.substring(4)
            else -> url
        }
        val FILENAME_STAR = Regex("""filename\*=UTF-8''([^;]+)""", RegexOption.IGNORE_CASE)
        val FILENAME_PLAIN = Regex("""filename="([^"]*)"""", RegexOption.IGNORE_CASE)

        fun filenameOf(disposition: String?): String? {
            if (disposition == null) return null
            FILENAME_STAR.find(disposition)?.let { return percentDecode(it.groupValues[1]) }
            return FILENAME_PLAIN.find(disposition)?.groupValues?.get(1)
        }

        /** RFC 8187 value: %XX escapes of UTF-8 bytes (a `+` is a plus, unlike form encoding). */
        fun percentDecode(value: String): String {
            val bytes = ByteArrayOutputStream()
            var i = 0
            while (i < value.length) {
                val c = value[i]
                if (c == '%' && i + 2 < value.length) {
                    bytes.write(value.substring(i + 1, i + 3).toInt(16))
                    i += 3
                } else {
                    bytes.write(c.toString().toByteArray(Charsets.UTF_8))
                    i += 1
                }
            }
            return bytes.toString(Charsets.UTF_8)
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
