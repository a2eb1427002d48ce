package dev.pheby.client

import dev.pheby.protocol.AttachmentAdded
import dev.pheby.protocol.AttachmentDirection
import dev.pheby.protocol.AttachmentKind
import dev.pheby.protocol.MessageStart
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertArrayEquals
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import java.io.ByteArrayInputStream
import java.io.ByteArrayOutputStream
import java.io.File
import java.util.concurrent.CountDownLatch
import kotlin.random.Random

/** Uploads and downloads over the attachment routes, next to the WebSocket. */
class AttachmentsTest : ServerTest() {
    private val bytes = Random(7).nextBytes(200 * 1024)

    @Test
    fun `an upload streams with progress (length known or not), downloads byte-identical, and serves ranges`() = blocking {
        val id = newConversation()
        val progress = mutableListOf<Pair<Long, Long?>>()
        val att = client.upload(id, "../kotlin/data.bin", ByteArrayInputStream(bytes), bytes.size.toLong()) { sent, total -> progress += sent to total }
        assertEquals(AttachmentDirection.INBOUND, att.direction)
        assertNull(att.messageId)
        assertEquals(bytes.size.toLong(), att.size)
        assertEquals("data.bin", att.filename, "the server keeps no path")
        assertEquals(bytes.size.toLong() to bytes.size.toLong(), progress.last())
        assertEquals(progress.sortedBy { it.first }, progress, "progress only grows")

        // A stream of unknown length goes chunked.
        val chunked = client.upload(id, "chunked.bin", ByteArrayInputStream(bytes))
        assertEquals(bytes.size.toLong(), chunked.size)

        val whole = ByteArrayOutputStream()
        val received = mutableListOf<Long>()
        val download = client.download(att, whole) { got, _ -> received += got }
        assertEquals(200, download.status)
        assertEquals("data.bin", download.filename)
        assertArrayEquals(bytes, whole.toByteArray())
        assertEquals(bytes.size.toLong(), received.last())

        fun range(header: String, expected: ByteArray, contentRange: String) = runBlocking {
            val out = ByteArrayOutputStream()
            val part = client.download(att.downloadPath, out, range = header)
            assertEquals(206, part.status)
            assertEquals(contentRange, part.contentRange)
            assertArrayEquals(expected, out.toByteArray())
        }
        range("bytes=0-0", bytes.copyOfRange(0, 1), "bytes 0-0/${bytes.size}")
        range("100-", bytes.copyOfRange(100, bytes.size), "bytes 100-${bytes.size - 1}/${bytes.size}")
        range("bytes=-500", bytes.copyOfRange(bytes.size - 500, bytes.size), "bytes ${bytes.size - 500}-${bytes.size - 1}/${bytes.size}")
        assertEquals(416, expectPheby("bad_request") { client.download(att, ByteArrayOutputStream(), range = "bytes=${bytes.size}-") }.status)
    }

    @Test
    fun `a chat claims an upload once and broadcasts attachment_added, a second claim is bad_request`() = blocking {
        val id = newConversation()
        val file = File.createTempFile("pheby-", ".md").apply { writeText("# Plan\n"); deleteOnExit() }
        val att = client.upload(id, file, contentType = "text/markdown")
        val frames = client.chat(id, "see attached", listOf(att.attachmentId)).toList()
        assertTrue(checkRun(frames).contains("You attached 1 file: ${file.name} (7 bytes, text inlined)"))
        val added = frames.filterIsInstance<AttachmentAdded>().single().attachment
        assertEquals(att.attachmentId, added.attachmentId)
        assertTrue(added.messageId != null)
        expectPheby("bad_request") { client.sendMessage(id, "again", listOf(att.attachmentId)) }
    }

    @Test
    fun `an agent's image arrives as attachment_added with the run's message and downloads intact`() = blocking {
        val frames = client.chat(newConversation(), "/sim image").toList()
        checkRun(frames)
        val image = frames.filterIsInstance<AttachmentAdded>().single().attachment
        assertEquals(AttachmentKind.IMAGE, image.kind)
        assertTrue(image.inlineImage)
        assertEquals(frames.filterIsInstance<MessageStart>().single().messageId, image.messageId)
        val png = ByteArrayOutputStream().also { client.download(image, it) }.toByteArray()
        assertEquals(image.size, png.size.toLong())
        assertArrayEquals(byteArrayOf(0x89.toByte(), 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a), png.copyOfRange(0, 8))
    }

    @Test
    fun `file errors are typed with their HTTP status`() = blocking {
        assertEquals(404, expectPheby("not_found") { client.download("/attachments/$UNKNOWN_ID", ByteArrayOutputStream()) }.status)
        assertEquals(400, expectPheby("bad_request") { client.upload(UNKNOWN_ID, "x.bin", ByteArrayInputStream(byteArrayOf(1))) }.status)
        assertEquals(400, expectPheby("bad_request") { client.upload(newConversation(), "empty.bin", ByteArrayInputStream(ByteArray(0))) }.status)
        PhebyClient(PhebyClientOptions(url = server.url, secret = "not-the-secret-at-all")).use { wrong ->
            assertEquals(401, expectPheby("unauthorized") { wrong.upload(newConversation(), "x.bin", ByteArrayInputStream(byteArrayOf(1))) }.status)
        }
    }

    @Test
    fun `cancelling the coroutine cancels an upload and a download midway`() = blocking {
        val id = newConversation()
        val big = Random(8).nextBytes(4 * 1024 * 1024)
        // Each transfer's progress callback holds its first chunk until the test has cancelled it, so the
        // cancel lands midway however fast the loopback is.
        for (transfer in listOf("upload", "download")) {
            val started = CompletableDeferred<Unit>()
            val release = CountDownLatch(1)
            val hold = ProgressListener { _, _ ->
                started.complete(Unit)
                release.await()
            }
            val out = ByteArrayOutputStream()
            val stored = if (transfer == "download") client.upload(id, "big.bin", ByteArrayInputStream(big)) else null
            val job = launch(Dispatchers.IO) {
                if (stored == null) client.upload(id, "big.bin", ByteArrayInputStream(big), big.size.toLong(), onProgress = hold)
                else client.download(stored, out, onProgress = hold)
                error("the $transfer completed although it was cancelled")
            }
            started.await()
            job.cancel()
            release.countDown()
            job.join()
            assertTrue(job.isCancelled, transfer)
            assertTrue(out.size() < big.size, "only part of the file was written (${out.size()} bytes)")
        }
        // The client is unharmed.
        client.ping()
    }
}
