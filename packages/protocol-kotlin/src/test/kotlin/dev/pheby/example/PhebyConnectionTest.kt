package dev.pheby.example

import dev.pheby.protocol.ApprovalRequest
import dev.pheby.protocol.ClarifyRequest
import dev.pheby.protocol.ConversationHistory
import dev.pheby.protocol.MessageComplete
import dev.pheby.protocol.MessageDelta
import dev.pheby.protocol.MessageStart
import dev.pheby.protocol.PhebyJson
import dev.pheby.protocol.ProtocolError
import dev.pheby.protocol.RunFinished
import dev.pheby.protocol.RunStatus
import dev.pheby.protocol.ServerMessage
import dev.pheby.protocol.ToolEvent
import dev.pheby.protocol.decodeServerMessage
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import mockwebserver3.MockResponse
import mockwebserver3.MockWebServer
import okhttp3.OkHttpClient
import okhttp3.Response
import okhttp3.WebSocket
import okhttp3.WebSocketListener
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertInstanceOf
import org.junit.jupiter.api.Test
import java.io.File
import java.net.InetAddress
import java.util.concurrent.CompletableFuture
import java.util.concurrent.LinkedBlockingQueue
import java.util.concurrent.TimeUnit

/**
 * Runs the OkHttp sketch of docs/kotlin.md ([PhebyConnection]) against a scripted WebSocket server on
 * 127.0.0.1: handshake, reconnect recovery, frames from a newer server, and the final close codes.
 */
class PhebyConnectionTest {
    private val fixtures = File(System.getProperty("pheby.fixtures") ?: "../protocol/fixtures")
    private val server = MockWebServer().apply { start(InetAddress.getByName("127.0.0.1"), 0) }
    private val http = OkHttpClient()

    @AfterEach
    fun close() {
        server.close()
        http.dispatcher.executorService.shutdown()
        http.connectionPool.evictAll()
    }

    private fun fixtureText(path: String): String {
        val json = PhebyJson.parseToJsonElement(File(fixtures, path).readText()).jsonObject
        return (json["frame"] ?: json).toString()
    }

    /** The server end of one connection: what the client sent, and the socket to answer on. */
    private class Peer : WebSocketListener() {
        val socket = CompletableFuture<WebSocket>()
        private val frames = LinkedBlockingQueue<JsonObject>()

        override fun onOpen(webSocket: WebSocket, response: Response) {
            socket.complete(webSocket)
        }

        override fun onMessage(webSocket: WebSocket, text: String) {
            frames.add(PhebyJson.parseToJsonElement(text).jsonObject)
        }

        fun next(): JsonObject = checkNotNull(frames.poll(30, TimeUnit.SECONDS)) { "the client sent nothing" }

        fun nextType(): String = next().getValue("type").jsonPrimitive.content

        fun send(text: String) = socket.get(30, TimeUnit.SECONDS).send(text)

        fun close(code: Int) = socket.get(30, TimeUnit.SECONDS).close(code, null)
    }

    private class RecordingUi : PhebyUi {
        val events = LinkedBlockingQueue<ServerMessage>()

        fun next(): ServerMessage = checkNotNull(events.poll(30, TimeUnit.SECONDS)) { "the ui got nothing" }

        override fun replaceConversation(history: ConversationHistory) { events.add(history) }
        override fun startMessage(message: MessageStart) { events.add(message) }
        override fun appendDelta(message: MessageDelta) { events.add(message) }
        override fun completeMessage(message: MessageComplete) { events.add(message) }
        override fun updateTool(event: ToolEvent) { events.add(event) }
        override fun askApproval(request: ApprovalRequest) { events.add(request) }
        override fun askClarification(request: ClarifyRequest) { events.add(request) }
        override fun finishRun(finished: RunFinished) { events.add(finished) }
        override fun showError(error: ProtocolError) { events.add(error) }
        override fun onEvent(message: ServerMessage) { events.add(message) }
    }

    private fun accept(peer: Peer) = server.enqueue(MockResponse.Builder().webSocketUpgrade(peer).build())

    @Test
    fun `handshakes, survives a newer server, recovers after a drop and stops at 4401`() {
        val first = Peer().also(::accept)
        val second = Peer().also(::accept)
        val ui = RecordingUi()
        val connection = PhebyConnection(http, server.url("/ws").toString(), "s3cret", { listOf("c1") }, ui)
        connection.start()

        val hello = first.next()
        assertEquals("hello", hello.getValue("type").jsonPrimitive.content)
        assertEquals("s3cret", hello.getValue("secret").jsonPrimitive.content)
        assertEquals("[\"delta.append\"]", hello.getValue("features").toString())
        first.send(fixtureText("valid/server/ready.features.json"))
        assertEquals(listOf("conversation.open", "models.current", "reasoning.current"), List(3) { first.nextType() })

        // A newer server: an unknown type, an unknown run status, then a malformed frame; none ends the loop.
        first.send(fixtureText("future/server/unknown-type.json"))
        first.send(fixtureText("future/server/run-finished-unknown-status.json"))
        first.send("{not json")
        first.send(fixtureText("valid/server/message.delta.json"))
        assertEquals("run.paused", (ui.next() as ServerMessage.Unknown).type)
        assertEquals(RunStatus.of("interrupted"), (ui.next() as RunFinished).status)
        assertInstanceOf(MessageDelta::class.java, ui.next())
        // Append deltas reach the ui stitched: the same cumulative text the plain delta carried.
        first.send(fixtureText("valid/server/message.delta.append-start.json"))
        first.send(fixtureText("valid/server/message.delta.append.json"))
        assertEquals("It's currently ", (ui.next() as MessageDelta).text)
        val stitched = ui.next() as MessageDelta
        assertEquals(decodeServerMessage(fixtureText("valid/server/message.delta.json")), stitched)

        // A dropped connection: reconnect, hello again, re-open what is on screen.
        first.close(1001)
        assertEquals("hello", second.nextType())
        second.send(fixtureText("valid/server/ready.json"))
        assertEquals("c1", second.next().getValue("conversation_id").jsonPrimitive.content)

        // 4401 is final: no third connection, even after many times the 500 ms backoff ceiling.
        Peer().also(::accept)
        second.close(4401)
        Thread.sleep(3_000)
        assertEquals(2, server.requestCount)
        connection.stop()
    }
}
