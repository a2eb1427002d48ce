package dev.pheby.client

import dev.pheby.protocol.PhebyJson
import dev.pheby.protocol.ServerMessage
import dev.pheby.protocol.decodeClientMessage
import dev.pheby.protocol.toJson
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.Deferred
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.launch
import kotlinx.coroutines.runInterruptible
import kotlinx.coroutines.withTimeout
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.booleanOrNull
import kotlinx.serialization.json.int
import kotlinx.serialization.json.jsonArray
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import kotlinx.serialization.json.long
import mockwebserver3.Dispatcher
import mockwebserver3.MockResponse
import mockwebserver3.MockWebServer
import mockwebserver3.RecordedRequest
import okhttp3.Response
import okhttp3.WebSocket
import okhttp3.WebSocketListener
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.DynamicTest
import org.junit.jupiter.api.TestFactory
import org.opentest4j.AssertionFailedError
import java.io.File
import java.net.InetAddress
import java.util.Collections
import java.util.concurrent.CompletableFuture
import java.util.concurrent.LinkedBlockingQueue
import java.util.concurrent.TimeUnit
import java.util.concurrent.atomic.AtomicInteger
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds

/**
 * The shared client scenarios (`packages/protocol/fixtures/client-scenarios/`, format in its README):
 * a scripted WebSocket server on 127.0.0.1 plays each one against this client. `@pheby/client` runs
 * the same files (`packages/client/test/scenarios.test.ts`), so the two clients behave alike.
 */
class ScenariosTest {
    private val dir = File(repoRoot, "packages/protocol/fixtures/client-scenarios")

    @TestFactory
    fun scenarios(): List<DynamicTest> =
        dir.listFiles { f -> f.name.endsWith(".json") }!!.sortedBy { it.name }.map { file ->
            val name = file.nameWithoutExtension
            DynamicTest.dynamicTest(name) {
                val scenario = PhebyJson.parseToJsonElement(file.readText()).jsonObject
                Run(scenario).play()
            }
        }

    /** The server end of one connection: what the client sent, and the socket to answer on. */
    private class Peer : WebSocketListener() {
        val socket = CompletableFuture<WebSocket>()
        val frames = LinkedBlockingQueue<JsonObject>()

        @Volatile
        var closed = false

        override fun onOpen(webSocket: WebSocket, response: Response) {
            socket.complete(webSocket)
        }

        override fun onMessage(webSocket: WebSocket, text: String) {
            frames.add(PhebyJson.parseToJsonElement(text).jsonObject)
        }

        override fun onClosing(webSocket: WebSocket, code: Int, reason: String) {
            closed = true
            webSocket.close(code, null)
        }

        override fun onClosed(webSocket: WebSocket, code: Int, reason: String) {
            closed = true
        }

        override fun onFailure(webSocket: WebSocket, t: Throwable, response: Response?) {
            closed = true
        }
    }

    /** One play of a scenario: its server, its client, and what was captured and seen. */
    private class Run(private val scenario: JsonObject) {
        private val connections = LinkedBlockingQueue<Peer>()
        private val connectionCount = AtomicInteger()
        private var current: Peer? = null
        private val server = MockWebServer().apply {
            dispatcher = object : Dispatcher() {
                override fun dispatch(request: RecordedRequest): MockResponse {
                    val peer = Peer()
                    connections.add(peer)
                    connectionCount.incrementAndGet()
                    return MockResponse.Builder().webSocketUpgrade(peer).build()
                }
            }
            start(InetAddress.getByName("127.0.0.1"), 0)
        }
        private val captures = HashMap<String, JsonElement>()
        private val outcomes = HashMap<String, Deferred<Outcome>>()
        private val events = Collections.synchronizedList(ArrayList<JsonObject>())
        private var eventCursor = 0
        private val states = Collections.synchronizedList(ArrayList<String>())

        private val client = scenario.getValue("client").jsonObject.let { options ->
            val reconnect = options["reconnect"]
            PhebyClient(
                PhebyClientOptions(
                    url = server.url("/ws").toString(),
                    secret = "s3cret",
                    features = options.getValue("features").jsonArray.map { it.jsonPrimitive.content }.toCollection(LinkedHashSet()),
                    reconnect = if (reconnect == null || reconnect is JsonPrimitive && reconnect.booleanOrNull == false) {
                        null
                    } else {
                        ReconnectPolicy(initialDelay = reconnect.jsonObject.getValue("initial_delay_ms").jsonPrimitive.long.milliseconds)
                    },
                ),
            )
        }

        fun play() = blocking {
            try {
                launch(start = CoroutineStart.UNDISPATCHED) {
                    client.state.collect { state ->
                        val name = stateName(state)
                        synchronized(states) { if (states.lastOrNull() != name) states += name }
                    }
                }
                launch(start = CoroutineStart.UNDISPATCHED) {
                    client.events.collect { events += PhebyJson.parseToJsonElement(it.toJson()).jsonObject }
                }
                // Actions run in this scope, not in a step's timeout, which would wait for them.
                val app: CoroutineScope = this
                for ((index, element) in scenario.getValue("steps").jsonArray.withIndex()) {
                    val step = element.jsonObject
                    try {
                        withTimeout(5.seconds) { step(app, step) }
                    } catch (e: Throwable) {
                        throw AssertionFailedError("step $index $step: ${e.message}", e)
                    }
                }
            } finally {
                client.close()
                server.close()
            }
        }

        private suspend fun step(app: CoroutineScope, step: JsonObject) {
            when (step.keys.first()) {
                "do" -> app.act(step)
                "recv" -> {
                    val frame = nextFrame()
                    match(step.getValue("recv"), frame, capture = true)?.let { fail("client frame $frame: $it") }
                }
                "send" -> peer().socket.get(5, TimeUnit.SECONDS).send(substitute(step.getValue("send")).toString())
                "close" -> {
                    val close = step.getValue("close").jsonObject
                    val peer = peer()
                    peer.socket.get(5, TimeUnit.SECONDS).close(close.getValue("code").jsonPrimitive.int, close["reason"]?.jsonPrimitive?.content)
                    peer.closed = true
                }
                "expect" -> expect(step)
                else -> fail("unknown step")
            }
        }

        private fun CoroutineScope.act(step: JsonObject) {
            val outcome: suspend () -> Outcome = when (val action = step.getValue("do").jsonPrimitive.content) {
                "connect" -> { -> frame(client.connect()) }
                "request" -> { -> frame(client.request(decodeClientMessage(step.getValue("message").toString()), ServerMessage::class)) }
                "chat" -> { ->
                    Outcome.Frames(client.chat(step.string("conversation_id"), step.string("text")).toList().map { json(it) })
                }
                "resync" -> { -> Outcome.Conversations(client.resync().keys) }
                "follow" -> { client.follow(step.string("conversation_id")); return }
                "close" -> { client.close(); return }
                else -> fail("unknown action $action")
            }
            val started = async(start = CoroutineStart.UNDISPATCHED) {
                try {
                    outcome()
                } catch (e: PhebyException) {
                    Outcome.Error(e.code)
                }
            }
            step["as"]?.let { outcomes[it.jsonPrimitive.content] = started }
        }

        private suspend fun expect(step: JsonObject) {
            when (val kind = step.string("expect")) {
                "state" -> {
                    val want = step.string("state")
                    while (stateName(client.state.value) != want) delay(10)
                }
                "states" -> {
                    val want = step.getValue("states").jsonArray.map { it.jsonPrimitive.content }
                    while (states.size < want.size) delay(10)
                    assertEquals(want, synchronized(states) { states.toList() }, "states")
                }
                "events" -> {
                    val patterns = step.getValue("events").jsonArray
                    val types = patterns.map { it.jsonObject.string("type") }.toSet()
                    var seen: List<IndexedValue<JsonObject>>
                    while (true) {
                        seen = synchronized(events) { events.withIndex().drop(eventCursor).filter { it.value.string("type") in types } }
                        if (seen.size >= patterns.size) break
                        delay(10)
                    }
                    for ((pattern, event) in patterns.zip(seen)) {
                        match(pattern, event.value, capture = false)?.let { fail("event ${event.value}: $it") }
                    }
                    eventCursor = seen[patterns.size - 1].index + 1
                }
                "result" -> {
                    val outcome = outcomes.getValue(step.string("of")).await()
                    when {
                        "type" in step -> {
                            val frame = (outcome as? Outcome.Frame)?.json ?: fail("expected a ${step.string("type")}, got $outcome")
                            assertEquals(step.string("type"), frame.string("type"))
                            step["frame"]?.let { pattern -> match(pattern, frame, capture = false)?.let { fail("$frame: $it") } }
                        }
                        "error" in step -> assertEquals(Outcome.Error(step.string("error")), outcome)
                        "frames" in step -> {
                            val frames = (outcome as? Outcome.Frames)?.json ?: fail("expected frames, got $outcome")
                            val patterns = step.getValue("frames").jsonArray
                            assertEquals(patterns.size, frames.size, "frames: $frames")
                            for ((pattern, frame) in patterns.zip(frames)) match(pattern, frame, capture = false)?.let { fail("$frame: $it") }
                        }
                        "conversations" in step ->
                            assertEquals(Outcome.Conversations(step.getValue("conversations").jsonArray.map { it.jsonPrimitive.content }.toSet()), outcome)
                    }
                }
                "quiet" -> {
                    val connectionsBefore = connectionCount.get()
                    val framesBefore = current?.frames?.size ?: 0
                    delay(step.getValue("ms").jsonPrimitive.long)
                    assertEquals(connectionsBefore, connectionCount.get(), "no new connection")
                    assertEquals(framesBefore, current?.frames?.size ?: 0, "no frame")
                }
                else -> fail("unknown expectation $kind")
            }
        }

        /** The newest connection (waiting for the first). */
        private suspend fun peer(): Peer {
            connections.poll()?.let { current = it }
            return current ?: runInterruptible(Dispatchers.IO) { connections.take() }.also { current = it }
        }

        /** The client's next frame: on the newest connection, or, once that one is closed, on the next one. */
        private suspend fun nextFrame(): JsonObject {
            while (true) {
                val peer = peer()
                peer.frames.poll()?.let { return it }
                if (peer.closed || connections.isNotEmpty()) {
                    current = runInterruptible(Dispatchers.IO) { connections.take() }
                    continue
                }
                runInterruptible(Dispatchers.IO) { peer.frames.poll(20, TimeUnit.MILLISECONDS) }?.let { return it }
            }
        }

        /** Null when [actual] matches [pattern] (README "Patterns and captures"), else why not. */
        private fun match(pattern: JsonElement, actual: JsonElement?, capture: Boolean): String? {
            if (pattern is JsonPrimitive && pattern.isString && pattern.content.startsWith("$")) {
                val name = pattern.content
                val bound = captures[name]
                return when {
                    bound != null -> if (bound == actual) null else "$name is $bound, got $actual"
                    !capture -> "$name was never captured"
                    actual == null || actual is JsonNull -> "nothing to capture as $name"
                    else -> null.also { captures[name] = actual }
                }
            }
            return when (pattern) {
                is JsonObject -> {
                    if (actual !is JsonObject) return "expected an object, got $actual"
                    pattern.entries.firstNotNullOfOrNull { (key, value) -> match(value, actual[key], capture)?.let { "$key: $it" } }
                }
                is JsonArray -> {
                    if (actual !is JsonArray || actual.size != pattern.size) return "expected $pattern, got $actual"
                    pattern.indices.firstNotNullOfOrNull { i -> match(pattern[i], actual[i], capture)?.let { "[$i]: $it" } }
                }
                else -> if (pattern == actual) null else "expected $pattern, got $actual"
            }
        }

        private fun substitute(value: JsonElement): JsonElement = when {
            value is JsonPrimitive && value.isString && value.content.startsWith("$") ->
                captures[value.content] ?: fail("${value.content} was never captured")
            value is JsonObject -> JsonObject(value.mapValues { substitute(it.value) })
            value is JsonArray -> JsonArray(value.map(::substitute))
            else -> value
        }
    }
}

private fun json(message: ServerMessage): JsonObject = PhebyJson.parseToJsonElement(message.toJson()).jsonObject

/** How an action the app started ended: a frame, frames (a chat), conversations (a resync), or a typed error. */
private sealed interface Outcome {
    data class Frame(val json: JsonObject) : Outcome
    data class Frames(val json: List<JsonObject>) : Outcome
    data class Conversations(val ids: Set<String>) : Outcome
    data class Error(val code: String) : Outcome
}

private fun frame(message: ServerMessage): Outcome = Outcome.Frame(json(message))

private fun JsonObject.string(key: String): String = getValue(key).jsonPrimitive.content

private fun fail(message: String): Nothing = throw AssertionFailedError(message)

private fun stateName(state: ConnectionState): String = when (state) {
    ConnectionState.Idle -> "idle"
    ConnectionState.Connecting -> "connecting"
    is ConnectionState.Open -> "open"
    is ConnectionState.Reconnecting -> "reconnecting"
    is ConnectionState.Failed -> "failed"
    is ConnectionState.Closed -> "closed"
}
