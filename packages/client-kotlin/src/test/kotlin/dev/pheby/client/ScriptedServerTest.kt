package dev.pheby.client

import dev.pheby.protocol.ApprovalChoice
import dev.pheby.protocol.ClarifyRequest
import dev.pheby.protocol.ConversationOpen
import dev.pheby.protocol.FEATURE_PRIORITY
import dev.pheby.protocol.HELLO_FEATURES_SENT_MAX
import dev.pheby.protocol.MessageDelta
import dev.pheby.protocol.OptionalNullable
import dev.pheby.protocol.PhebyJson
import dev.pheby.protocol.RunFinished
import dev.pheby.protocol.RunStatus
import dev.pheby.protocol.ServerMessage
import dev.pheby.protocol.ThoughtComplete
import dev.pheby.protocol.ThoughtDelta
import dev.pheby.protocol.decodeServerMessage
import dev.pheby.protocol.toJson
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.async
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.flow.filterIsInstance
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.flow.take
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.launch
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.jsonArray
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import mockwebserver3.MockResponse
import mockwebserver3.MockWebServer
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import java.net.InetAddress
import java.util.Collections
import java.util.concurrent.TimeUnit
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.minutes
import kotlin.time.Duration.Companion.seconds

/**
 * What the real server cannot be made to do: frames of a newer server, a malformed frame, a missed
 * append delta, a reply that never comes, the close code 4426 and an exact 4429 "retry after N s",
 * an HTTP 429 with `Retry-After` only, and a question that expires. A scripted WebSocket peer on 127.0.0.1 plays the server,
 * with frames from `@pheby/protocol`'s fixtures.
 */
class ScriptedServerTest {
    private val server = MockWebServer().apply { start(InetAddress.getByName("127.0.0.1"), 0) }

    @AfterEach
    fun close() = server.close()


    /** Connects [client] to [peer], which accepts its hello. */
    private suspend fun connect(client: PhebyClient, peer: ScriptedPeer) = coroutineScope {
        val connected = async { client.connect() }
        peer.accept()
        connected.await()
    }

    private fun peer() = ScriptedPeer().also { server.enqueue(MockResponse.Builder().webSocketUpgrade(it).build()) }

    private fun client(policy: ReconnectPolicy? = ReconnectPolicy(initialDelay = 50.milliseconds)) =
        PhebyClient(PhebyClientOptions(url = server.url("/ws").toString(), secret = "s3cret", reconnect = policy))

    @Test
    fun `frames of a newer server arrive as Unknown, a malformed frame is skipped, and append deltas are stitched`() = blocking {
        val peer = peer()
        client().use { client ->
            val connected = async { client.connect() }
            val hello = peer.accept()
            assertEquals("s3cret", hello.getValue("secret").jsonPrimitive.content)
            // In FEATURE_PRIORITY order, whatever the options' order.
            assertEquals("""["delta.append","resume","queue","push","activity","modes","inbox","workspaces","changes"]""", hello.getValue("features").toString())
            connected.await()
            val events = async(start = CoroutineStart.UNDISPATCHED) { client.events.take(4).toList() }
            val invalid = async(start = CoroutineStart.UNDISPATCHED) { client.invalidFrames.first() }
            peer.send(fixture("future/server/unknown-type.json"))
            peer.send(fixture("future/server/run-finished-unknown-status.json"))
            peer.send("{not json")
            peer.send(fixture("valid/server/message.delta.append-start.json"))
            peer.send(fixture("valid/server/message.delta.append.json"))
            val (unknown, finished, start, stitched) = events.await()
            assertEquals("run.paused", (unknown as ServerMessage.Unknown).type)
            assertEquals(RunStatus.of("interrupted"), (finished as RunFinished).status)
            assertEquals("It's currently ", (start as MessageDelta).text)
            // The two append deltas stitch to exactly the cumulative delta a v1 client gets.
            assertEquals(decodeServerMessage(fixture("valid/server/message.delta.json")), stitched)
            assertEquals("{not json", invalid.await().raw)
            assertTrue(client.state.value is ConnectionState.Open)
        }
    }

    @Test
    fun `a hello names at most 16 features, the known ones first in FEATURE_PRIORITY order`() = blocking {
        val peer = peer()
        val later = (1..12).map { "x-later-$it" }
        val wanted = later.take(3) + Features.ALL.reversed() + later.drop(3)
        val options = PhebyClientOptions(url = server.url("/ws").toString(), secret = "s3cret", features = wanted.toSet(), reconnect = null)
        PhebyClient(options).use { client ->
            val connected = async { client.connect() }
            val hello = peer.accept()
            connected.await()
            val sent = hello.getValue("features").jsonArray.map { it.jsonPrimitive.content }
            assertEquals(HELLO_FEATURES_SENT_MAX, sent.size)
            assertEquals(FEATURE_PRIORITY + later.take(HELLO_FEATURES_SENT_MAX - FEATURE_PRIORITY.size), sent)
        }
    }

    @Test
    fun `a missed append delta is dropped and the conversation re-opened once, whose run text resets the draft`() = blocking {
        val peer = peer()
        client().use { client ->
            connect(client, peer)
            val stitched = async(start = CoroutineStart.UNDISPATCHED) { client.events.filterIsInstance<MessageDelta>().first() }
            // Offsets beyond the (empty) draft: a delta went missing, so every later one misses too.
            val append = fixture("valid/server/message.delta.append.json")
            peer.send(append)
            peer.send(append)
            val reopen = peer.next()
            assertEquals("conversation.open", reopen.type)
            val delta = decodeServerMessage(append) as MessageDelta
            assertEquals(delta.conversationId, reopen.getValue("conversation_id").jsonPrimitive.content)
            // The snapshot's run carries the draft so far; the next append delta continues it.
            val history = PhebyJson.parseToJsonElement(fixture("valid/server/conversation.history.active-run.json")).jsonObject
            val run = JsonObject(history.getValue("run").jsonObject + ("text" to JsonPrimitive("It's currently ")))
            peer.send(JsonObject(history + ("run" to run)).toString())
            peer.send(append)
            assertEquals(decodeServerMessage(fixture("valid/server/message.delta.json")), stitched.await())
            // The second missed delta sent no second open: the client's next frame is this ping.
            val pinged = async { runCatching { client.ping() } }
            assertEquals("ping", peer.next().type)
            pinged.cancel()
        }
    }

    @Test
    fun `thought deltas arrive as the whole thought, and one re-open repairs missed thought and message deltas`() = blocking {
        val peer = peer()
        val options = PhebyClientOptions(url = server.url("/ws").toString(), secret = "s3cret", features = Features.DEFAULTS + Features.THOUGHTS, reconnect = null)
        PhebyClient(options).use { client ->
            val connected = async { client.connect() }
            val hello = peer.accept(enabled = listOf("delta.append", "thoughts"))
            assertTrue("thoughts" in hello.getValue("features").jsonArray.map { it.jsonPrimitive.content })
            connected.await()
            val thoughts = async(start = CoroutineStart.UNDISPATCHED) { client.thoughts(CONVERSATION).take(4).toList() }
            val stitched = async(start = CoroutineStart.UNDISPATCHED) { client.events.filterIsInstance<MessageDelta>().first() }
            val first = decodeServerMessage(fixture("valid/server/thought.delta.json")) as ThoughtDelta
            peer.send(fixture("valid/server/thought.delta.json"))
            peer.send(fixture("valid/server/thought.delta.append-resume.json"))
            peer.send(fixture("valid/server/thought.complete.json"))
            // A second thought, and the answer, both past what this connection received: deltas went missing.
            val second = first.copy(thoughtId = "thought-8c1f2e3d4c5b6a798877665544332211-2", offset = 14, text = " take an umbrella.")
            peer.send(second.toJson())
            peer.send(fixture("valid/server/message.delta.append.json"))
            peer.send(second.toJson())
            val reopen = peer.next()
            assertEquals("conversation.open", reopen.type)
            assertEquals(CONVERSATION, reopen.getValue("conversation_id").jsonPrimitive.content)
            // The snapshot carries the thought so far ("Rain later, so") and the draft; the next deltas continue them.
            val history = PhebyJson.parseToJsonElement(fixture("valid/server/conversation.history.thoughts.json")).jsonObject
            val run = JsonObject(history.getValue("run").jsonObject + ("text" to JsonPrimitive("It's currently ")))
            peer.send(JsonObject(history + ("run" to run) - "request_id").toString())
            peer.send(second.toJson())
            peer.send(fixture("valid/server/message.delta.append.json"))

            val (whole, continued, complete, repaired) = thoughts.await()
            assertEquals(first, whole)
            val full = "The user asks about the weather. \uD83C\uDF26 I should check the forecast first."
            assertEquals(ThoughtDelta::class, continued::class)
            continued as ThoughtDelta
            assertEquals(0L, continued.offset, "stitched: offset 0 and the whole thought so far")
            assertEquals(full, continued.text)
            assertEquals(43L, continued.seq, "the rest of the frame as sent")
            assertEquals(full, (complete as ThoughtComplete).text)
            assertEquals(second.copy(offset = 0, text = "Rain later, so take an umbrella."), repaired)
            assertEquals(decodeServerMessage(fixture("valid/server/message.delta.json")), stitched.await())
            // The other missed deltas sent no second open: the client's next frame is this ping.
            val pinged = async { runCatching { client.ping() } }
            assertEquals("ping", peer.next().type)
            pinged.cancel()
        }
    }

    @Test
    fun `a request without a reply times out, and a reply that does not decode fails its request`() = blocking {
        val peer = peer()
        client().use { client ->
            connect(client, peer)
            expectPheby(PhebyException.TIMEOUT) { client.request<dev.pheby.protocol.Pong>(dev.pheby.protocol.Ping(), timeout = 200.milliseconds) }
            assertEquals("ping", peer.next().type)
            val pinged = async { runCatching { client.ping() }.exceptionOrNull() }
            val id = peer.next().getValue("request_id").jsonPrimitive.content
            peer.send("""{"type":"pong","request_id":"$id"}""") // no ts
            assertEquals(PhebyException.INVALID_FRAME, (pinged.await() as PhebyException).code)
        }
    }

    @Test
    fun `expiry - a clarification's countdown is expires_at minus ts, and null when the server does not know`() = blocking {
        // The simulator cannot ask a question that expires (only /sim timeout, an approval: ExpiryTest); Pheby's
        // ask_user tool of a real ACP agent can. So the server's clarify.request is scripted, from the fixture.
        val peer = peer()
        val options = PhebyClientOptions(url = server.url("/ws").toString(), secret = "s3cret", features = setOf(Features.EXPIRY), reconnect = null)
        PhebyClient(options).use { client ->
            val connected = async { client.connect() }
            assertEquals("""["expiry"]""", peer.accept().getValue("features").toString())
            connected.await()
            val events = async(start = CoroutineStart.UNDISPATCHED) { client.events.take(2).toList() }
            val unknown = PhebyJson.parseToJsonElement(fixture("valid/server/clarify.request.expiry.json")).jsonObject
            peer.send(JsonObject(unknown + ("expires_at" to JsonPrimitive("2026-09-02T18:04:00Z"))).toString())
            peer.send(unknown.toString())
            val (known, notKnown) = events.await().map { it as ClarifyRequest }
            assertEquals(OptionalNullable.Value("2026-09-02T18:04:00Z"), known.expiresAt)
            assertEquals(4.minutes, known.expiresIn, "from ts (+00:00) to expires_at (Z), whatever the phone's clock says")
            assertEquals(OptionalNullable.Value(null), notKnown.expiresAt)
            assertNull(notKnown.expiresIn)
        }
    }

    @Test
    fun `4429 with retry after N s - the client waits exactly that long, then reconnects`() = blocking {
        val first = peer()
        val locked = peer()
        val third = peer()
        client().use { client ->
            val states = Collections.synchronizedList(mutableListOf<ConnectionState>())
            launch(start = CoroutineStart.UNDISPATCHED) { client.state.collect { states += it } }
            connect(client, first)
            val reconnected = async(start = CoroutineStart.UNDISPATCHED) { client.resyncs.first() }
            first.close(CloseCodes.GOING_AWAY)
            locked.refuse("rate_limited", "Too many failed hellos from this address; retry after 1 s", CloseCodes.LOCKED_OUT, "retry after 1 s")
            third.accept()
            reconnected.await()
            val wait = states.filterIsInstance<ConnectionState.Reconnecting>().single { it.cause.code == "rate_limited" }
            assertEquals(1.seconds, wait.delay)
            assertEquals(1.seconds, wait.cause.retryAfter)
        }
    }

    @Test
    fun `an HTTP 429 whose message names no wait - Retry-After does, and the answer route gets the secret and the body`() = blocking {
        val body = """{"error":{"code":"rate_limited","message":"Too many failed attempts"}}"""
        server.enqueue(MockResponse.Builder().code(429).addHeader("Retry-After", "7").body(body).build())
        client().use { client ->
            val e = expectPheby("rate_limited") { client.answerApproval("a/1", ApprovalChoice.DENY, "not now") }
            assertEquals(429, e.status)
            assertEquals(7.seconds, e.retryAfter)
            val request = server.takeRequest(30, TimeUnit.SECONDS)!!
            assertEquals("POST", request.method)
            assertEquals("/approvals/a%2F1", request.url.encodedPath, "the ID is one path segment")
            assertEquals("Bearer s3cret", request.headers["Authorization"])
            assertEquals("""{"choice":"deny","reason":"not now"}""", request.body?.utf8())
        }
    }

    @Test
    fun `a re-open the server refuses after a reconnect drops that connection, and the next one catches up`() = blocking {
        val first = peer()
        val refusing = peer()
        val third = peer()
        client().use { client ->
            connect(client, first)
            val conversation = "a1b2c3d4e5f60718293a4b5c6d7e8f90"
            client.follow(conversation)
            val resynced = async(start = CoroutineStart.UNDISPATCHED) { client.resyncs.first() }
            first.close(CloseCodes.GOING_AWAY)
            refusing.accept()
            val refused = refusing.next()
            assertEquals("conversation.open", refused.type)
            val id = refused.getValue("request_id").jsonPrimitive.content
            refusing.send("""{"type":"error","request_id":"$id","error":{"code":"internal_error","message":"boom"},"ts":"2026-09-02T18:00:00+00:00"}""")
            // Not a silent gap: that connection is dropped and the next round re-opens the conversation.
            third.accept()
            val reopen = third.next()
            assertEquals("conversation.open", reopen.type)
            assertEquals(conversation, reopen.getValue("conversation_id").jsonPrimitive.content)
            val history = PhebyJson.parseToJsonElement(fixture("valid/server/conversation.history.json")).jsonObject
            third.send(JsonObject(history + ("request_id" to reopen.getValue("request_id"))).toString())
            assertEquals(setOf(conversation), resynced.await().keys)
        }
    }

    @Test
    fun `a cancelled connect leaves the state Closed, not Connecting`() = blocking {
        val peer = peer()
        client().use { client ->
            val connecting = launch { client.connect() }
            assertEquals("hello", peer.next().type) // and never answered
            connecting.cancel()
            connecting.join()
            assertEquals(ConnectionState.Closed(null), client.state.value)
        }
    }

    @Test
    fun `4426 and 4401 are final - no further connection is attempted`() = blocking {
        for ((code, closeCode) in listOf("version_mismatch" to CloseCodes.VERSION_MISMATCH, "unauthorized" to CloseCodes.UNAUTHORIZED)) {
            val first = peer()
            val refused = peer()
            client().use { client ->
                connect(client, first)
                val before = server.requestCount
                first.close(CloseCodes.GOING_AWAY)
                refused.refuse(code, "no", closeCode, code)
                val failed = client.state.first { it is ConnectionState.Failed } as ConnectionState.Failed
                assertEquals(code, failed.error.code)
                // The reconnect loop has ended, so no later connection can come either.
                assertFalse(client.reconnecting)
                assertEquals(before + 1, server.requestCount)
            }
        }
    }
}

