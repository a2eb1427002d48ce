package dev.pheby.client

import dev.pheby.protocol.AttachmentDescriptor
import dev.pheby.protocol.UploadResponse
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.ensureActive
import kotlinx.coroutines.launch
import kotlinx.coroutines.withContext
import okhttp3.Call
import okhttp3.MediaType
import okhttp3.MediaType.Companion.toMediaTypeOrNull
import okhttp3.Request
import okhttp3.RequestBody
import okio.BufferedSink
import java.io.ByteArrayOutputStream
import java.io.InputStream
import java.io.OutputStream

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
internal class Attachments(private val routes: HttpRoutes) {
    private val http = routes.http

    suspend fun upload(
        conversationId: String,
        filename: String,
        content: InputStream,
        contentLength: Long?,
        contentType: String,
        onProgress: ProgressListener?,
    ): AttachmentDescriptor {
        val url = routes.url {
            addPathSegment("attachments")
            addQueryParameter("conversation_id", conversationId)
            addQueryParameter("filename", filename)
        }
        val body = StreamBody(content, contentLength, contentType.toMediaTypeOrNull(), onProgress)
        val request = with(routes) { Request.Builder().url(url).post(body).authorized().build() }
        return http.newCall(request).await().use {
            if (it.code != 201) throw routes.httpError(it)
            routes.decode(it, UploadResponse.serializer()).attachment
        }
    }

    suspend fun download(downloadPath: String, to: OutputStream, range: String?, onProgress: ProgressListener?): Download {
        val url = routes.url { addEncodedPathSegments(downloadPath.removePrefix("/")) }
        val request = with(routes) { Request.Builder().url(url).authorized() }
            .apply { range?.let { header("Range", if (it.startsWith("bytes=")) it else "bytes=$it") } }
            .build()
        val call = http.newCall(request)
        val response = call.await()
        return response.use {
            if (it.code != 200 && it.code != 206) throw routes.httpError(it)
            val total = it.body.contentLength().takeIf { length -> length >= 0 }
            val size = copyCancellably(call, it.body.byteStream(), to, total, onProgress)
            Download(it.code, it.header("Content-Type"), it.header("Content-Range"), filenameOf(it.header("Content-Disposition")), size)
        }
    }

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
