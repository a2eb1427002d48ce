package dev.pheby.client

import dev.pheby.protocol.PhebyJson
import dev.pheby.protocol.ServerMessage
import dev.pheby.protocol.decodeServerMessage
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.runInterruptible
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import mockwebserver3.MockResponse
import mockwebserver3.MockWebServer
import okhttp3.Response
import okhttp3.WebSocket
import okhttp3.WebSocketListener
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assertions.assertEquals
import java.io.File
import java.net.InetAddress
import java.util.concurrent.CompletableFuture
import java.util.concurrent.LinkedBlockingQueue
import java.util.concurrent.TimeUnit

// The scripted server of the tests that need frames the real server cannot be made to send (or does not
// send yet): a WebSocket peer on a MockWebServer bound to 127.0.0.1, answering with @pheby/protocol's fixtures.

/** The conversation of the shared fixtures. */
internal const val CONVERSATION = "a1b2c3d4e5f60718293a4b5c6d7e8f90"

private val fixtures = File(repoRoot, "packages/protocol/fixtures")

/** The frame of a fixture of `@pheby/protocol` ([path] under `packages/protocol/fixtures`), as JSON text. */
internal fun fixture(path: String): String = fixtureObject(path).toString()

/** The frame of a fixture of `@pheby/protocol` (its `frame` when it wraps one). */
internal fun fixtureObject(path: String): JsonObject {
    val json = PhebyJson.parseToJsonElement(File(fixtures, path).readText()).jsonObject
    return (json["frame"] ?: json).jsonObject
}

internal val JsonObject.type: String get() = getValue("type").jsonPrimitive.content

/** The server end of one connection: what the client sent, and the socket to answer on. */
internal class ScriptedPeer : WebSocketListener() {
    private val socket = CompletableFuture<WebSocket>()
    private val frames = LinkedBlockingQueue<JsonObject>()

    override fun onOpen(webSocket: WebSocket, response: Response) {
        socket.complete(webSocket)
    }

    override fun onMessage(webSocket: WebSocket, text: String) {
        frames.add(PhebyJson.parseToJsonElement(text).jsonObject)
    }

    override fun onClosing(webSocket: WebSocket, code: Int, reason: String) {
        webSocket.close(code, null)
    }

    /** The client's next frame; suspends (off the test's thread, so the client's coroutines run meanwhile). */
    suspend fun next(): JsonObject = runInterruptible(Dispatchers.IO) {
        checkNotNull(frames.poll(30, TimeUnit.SECONDS)) { "the client sent nothing" }
    }

    fun send(text: String) = socket.get(30, TimeUnit.SECONDS).send(text)

    fun close(code: Int, reason: String? = null) = socket.get(30, TimeUnit.SECONDS).close(code, reason)

    /** Reads the hello and answers ready, enabling [enabled] (`delta.append` unless told otherwise). */
    suspend fun accept(features: Boolean = true, enabled: List<String> = listOf("delta.append")): JsonObject = next().also { hello ->
        assertEquals("hello", hello.type)
        val id = hello.getValue("request_id").jsonPrimitive.content
        val enabled = if (features) ""","features":${enabled.joinToString(",", "[", "]") { "\"$it\"" }}""" else ""
        send("""{"type":"ready","request_id":"$id","protocol_version":1,"server":"scripted"$enabled,"ts":"2026-09-02T18:00:00+00:00"}""")
    }

    /** Reads the hello and refuses it as the server does: an error echoing its request_id, then [closeCode]. */
    suspend fun refuse(code: String, message: String, closeCode: Int, reason: String) {
        val id = next().getValue("request_id").jsonPrimitive.content
        send("""{"type":"error","request_id":"$id","error":{"code":"$code","message":"$message"},"ts":"2026-09-02T18:00:00+00:00"}""")
        close(closeCode, reason)
    }

    /**
     * Reads the client's next frame, checks it is a [type] request, and answers it with [reply] carrying its
     * `request_id` (the reply's own is replaced). Returns the request as the client sent it.
     */
    suspend fun answer(type: String, reply: JsonObject): JsonObject = next().also { request ->
        assertEquals(type, request.type, "the client sent $request")
        send(JsonObject(reply + ("request_id" to request.getValue("request_id"))).toString())
    }

    /** Reads the client's next frame, checks it is a [type] request, and refuses it with the error [code]. */
    suspend fun refuse(type: String, code: String, message: String): JsonObject = next().also { request ->
        assertEquals(type, request.type, "the client sent $request")
        val error = JsonObject(mapOf("code" to JsonPrimitive(code), "message" to JsonPrimitive(message)))
        val frame = mapOf(
            "type" to JsonPrimitive("error"),
            "request_id" to request.getValue("request_id"),
            "error" to error,
            "ts" to JsonPrimitive("2026-09-02T18:00:00+00:00"),
        )
        send(JsonObject(frame).toString())
    }
}

/**
 * A test class whose server is scripted: a MockWebServer on 127.0.0.1 (one per test), clients with the
 * default features [connected] to a [ScriptedPeer] of it, and the fixtures to compare the client's frames with.
 */
abstract class ScriptedTest {
    protected val server = MockWebServer().apply { start(InetAddress.getByName("127.0.0.1"), 0) }

    @AfterEach
    fun closeServer() = server.close()

    /** A client with the default features (close it), connected to a peer whose `ready` enables [enabled]. */
    internal suspend fun CoroutineScope.connected(enabled: List<String>): Pair<PhebyClient, ScriptedPeer> {
        val peer = ScriptedPeer().also { server.enqueue(MockResponse.Builder().webSocketUpgrade(it).build()) }
        val client = PhebyClient(PhebyClientOptions(url = server.url("/ws").toString(), secret = "s3cret", reconnect = null))
        val connected = async { client.connect() }
        peer.accept(enabled = enabled)
        connected.await()
        return client to peer
    }

    /** [sent] is the client fixture [path], but for what the client chose itself (`request_id` and [generated]). */
    protected fun assertSent(path: String, sent: JsonObject, vararg generated: String) {
        val keys = setOf("request_id") + generated
        assertEquals(JsonObject(fixtureObject(path) - keys), JsonObject(sent - keys))
    }

    /** The server fixture [path] as the reply to [request] (with its `request_id`). */
    protected fun reply(path: String, request: JsonObject): ServerMessage =
        decodeServerMessage(JsonObject(fixtureObject(path) + ("request_id" to request.getValue("request_id"))).toString())
}
