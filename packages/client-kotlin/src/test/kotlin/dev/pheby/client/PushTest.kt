package dev.pheby.client

import dev.pheby.protocol.ApprovalChoice
import dev.pheby.protocol.ApprovalRequest
import dev.pheby.protocol.ApprovalResolved
import dev.pheby.protocol.ClarifyRequest
import dev.pheby.protocol.ClarifyResolved
import dev.pheby.protocol.PresenceState
import dev.pheby.protocol.PushApprovalPayload
import dev.pheby.protocol.PushClarifyPayload
import dev.pheby.protocol.PushEventKind
import dev.pheby.protocol.PushResolvedPayload
import dev.pheby.protocol.PushRunFinishedPayload
import dev.pheby.protocol.PushTestPayload
import dev.pheby.protocol.RunStatus
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.flow.onEach
import kotlinx.coroutines.flow.toList
import org.junit.jupiter.api.AfterAll
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertInstanceOf
import org.junit.jupiter.api.Assertions.assertNotEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

/**
 * The `push` extension end to end: the real server sends real Web Push requests to [WebPushReceiver],
 * which decrypts them (RFC 8291) and verifies their VAPID signature against the key the client read from
 * `ready`; notifications are answered over HTTP, as a notification's action does.
 */
class PushTest : ServerTest(mapOf("PHEBY_PUSH_ALLOW_PRIVATE" to "true")) {
    private val receiver = WebPushReceiver()

    @AfterAll
    fun stopReceiver() {
        receiver.close()
        assertEquals(emptyList<String>(), receiver.errors, "every push decrypted, verified and decoded")
    }

    /** Runs [block] with a new subscription of the receiver, subscribed for [events], unsubscribed after. */
    private suspend fun subscribed(
        events: List<PushEventKind>? = null,
        block: suspend (WebPushReceiver.Subscription, String) -> Unit,
    ) {
        val subscription = receiver.subscription("s${System.nanoTime()}")
        val id = client.subscribePush(subscription.endpoint, subscription.p256dh, subscription.auth, events = events).subscriptionId
        try {
            block(subscription, id)
        } finally {
            client.unsubscribePush(id)
        }
    }

    @Test
    fun `push is asked for by default - ready carries the VAPID key, and a connection without it gets unknown_type`() = blocking {
        assertTrue(Features.PUSH in client.features)
        assertTrue(Regex("[A-Za-z0-9_-]{87}").matches(client.vapidPublicKey!!), client.vapidPublicKey)
        server.client { copy(features = setOf(Features.DELTA_APPEND)) }.use { v1 ->
            assertNull(v1.vapidPublicKey)
            assertEquals(setOf(Features.DELTA_APPEND), v1.features)
            expectPheby("unknown_type") { v1.listPush() }
            v1.presence(PresenceState.ACTIVE) // no push: remembered nowhere, sent nowhere
            v1.ping()
        }
    }

    @Test
    fun `subscribe, list, test, subscribe again, unsubscribe - the test push decrypts and is signed with ready's key`() = blocking {
        val phone = receiver.subscription("phone")
        val events = listOf(PushEventKind.APPROVAL, PushEventKind.RUN_FINISHED)
        val id = client.subscribePush(phone.endpoint, phone.p256dh, phone.auth, deviceName = "Pixel 9", events = events).subscriptionId

        val listed = client.listPush().subscriptions.single { it.subscriptionId == id }
        assertEquals("Pixel 9", listed.deviceName)
        assertEquals(receiver.origin, listed.endpointOrigin, "the origin only, never the endpoint")
        assertEquals(events, listed.events)

        val tested = client.testPush(id)
        assertTrue(tested.ok, "$tested")
        assertNull(tested.status, "the server never tells an endpoint's HTTP status")
        assertNull(tested.error)
        val push = phone.next()
        assertEquals(id, assertInstanceOf(PushTestPayload::class.java, push.payload).subscriptionId)
        assertEquals(client.vapidPublicKey, push.vapidKey, "signed with the key ready announced")
        assertEquals(push.payload.tag, push.headers["Topic"], "the payload's tag is the push's Topic")

        // The same endpoint again (a new distributor, a reinstall) updates it and keeps its ID.
        assertEquals(id, client.subscribePush(phone.endpoint, phone.p256dh, phone.auth).subscriptionId)
        assertEquals(PushEventKind.entries, client.listPush().subscriptions.single { it.subscriptionId == id }.events)

        assertEquals(id, client.unsubscribePush(id).subscriptionId)
        assertTrue(client.listPush().subscriptions.none { it.subscriptionId == id })
        expectPheby("not_found") { client.unsubscribePush(id) }
        expectPheby("not_found") { client.testPush(id) }
    }

    @Test
    fun `an approval is pushed, answered from the notification over HTTP, then resolved and finished by push`() = blocking {
        subscribed(listOf(PushEventKind.APPROVAL, PushEventKind.RUN_FINISHED)) { phone, _ ->
            val id = newConversation("Pushed approval")
            lateinit var pushed: PushApprovalPayload
            val frames = client.chat(id, "/sim approval").onEach { event ->
                if (event is ApprovalRequest) {
                    pushed = assertInstanceOf(PushApprovalPayload::class.java, phone.next().payload)
                    assertEquals(event.approvalId, pushed.approvalId)
                    assertEquals(id, pushed.conversationId)
                    assertEquals(event.choices, pushed.choices)
                    // The notification's action: HTTP, no socket involved.
                    val answered = client.answerApproval(pushed.approvalId, ApprovalChoice.ONCE)
                    assertEquals(ApprovalChoice.ONCE, answered.choice)
                    assertEquals(id, answered.conversationId)
                }
            }.toList()
            assertEquals("Approved (once): I ran `rm -rf /tmp/pheby-sim-build`.", checkRun(frames))
            val resolution = frames.filterIsInstance<ApprovalResolved>().single()
            assertNull(resolution.requestId, "answered over HTTP: every client gets it without a request_id")

            val resolved = assertInstanceOf(PushResolvedPayload::class.java, phone.next().payload)
            assertEquals(pushed.tag, resolved.tag, "the resolved push replaces the question's notification")
            assertEquals(pushed.approvalId, resolved.approvalId)
            val finished = assertInstanceOf(PushRunFinishedPayload::class.java, phone.next().payload)
            assertEquals(RunStatus.COMPLETED, finished.status)
            assertEquals(frames.first().let { (it as dev.pheby.protocol.RunAccepted).runId }, finished.runId)

            val again = expectPheby("approval_not_found") { client.answerApproval(pushed.approvalId, ApprovalChoice.DENY) }
            assertEquals(404, again.status)
        }
    }

    @Test
    fun `a question is pushed and answered with free text over HTTP`() = blocking {
        subscribed(listOf(PushEventKind.CLARIFY)) { phone, _ ->
            val frames = client.chat(newConversation("Pushed question"), "/sim clarify").onEach { event ->
                if (event is ClarifyRequest) {
                    val pushed = assertInstanceOf(PushClarifyPayload::class.java, phone.next().payload)
                    assertEquals(event.clarifyId, pushed.clarifyId)
                    assertEquals(event.question, pushed.question)
                    assertTrue(pushed.allowFreeText)
                    assertTrue(client.answerClarification(pushed.clarifyId, "a Kotlin answer").accepted)
                    expectPheby("clarify_not_found") { client.answerClarification(pushed.clarifyId, "again") }
                }
            }.toList()
            assertTrue(checkRun(frames).contains("a Kotlin answer"))
            assertEquals(1, frames.count { it is ClarifyResolved })
        }
    }

    @Test
    fun `presence - the conversation on screen is not pushed, also after a reconnect, until the app goes to the background`() = blocking {
        subscribed(listOf(PushEventKind.RUN_FINISHED)) { phone, _ ->
            val shown = newConversation("On screen")
            val other = newConversation("Elsewhere")
            // One subscription's pushes go out in order: had the shown conversation's run been pushed, it would come first.
            suspend fun nextPushedConversation() = (phone.next().payload as PushRunFinishedPayload).conversationId

            client.presence(PresenceState.ACTIVE, shown)
            checkRun(client.chat(shown, "seen on screen").toList())
            checkRun(client.chat(other, "not on screen").toList())
            assertEquals(other, nextPushedConversation())

            // A new connection has no presence on the server: the client says it again first.
            val before = client.state.value
            client.reconnect()
            client.state.first { it is ConnectionState.Open && it !== before }
            checkRun(client.chat(shown, "still on screen").toList())
            checkRun(client.chat(other, "still elsewhere").toList())
            assertEquals(other, nextPushedConversation())

            client.presence(PresenceState.BACKGROUND)
            checkRun(client.chat(shown, "now in the background").toList())
            assertEquals(shown, nextPushedConversation())
        }
    }

    @Test
    fun `the HTTP answers need the secret - 401 for a wrong one, 404 for an unknown question, no socket needed`() = blocking {
        // Never connected: a notification action runs without a socket.
        PhebyClient(PhebyClientOptions(url = server.url, secret = server.secret)).use { offline ->
            val unknown = expectPheby("approval_not_found") { offline.answerApproval("no-such-approval", ApprovalChoice.ONCE) }
            assertEquals(404, unknown.status)
            assertEquals(404, expectPheby("clarify_not_found") { offline.answerClarification("no-such-question", "yes") }.status)
        }
        PhebyClient(PhebyClientOptions(url = server.url, secret = "not-the-secret-0123456789")).use { wrong ->
            val refused = expectPheby("unauthorized") { wrong.answerApproval("no-such-approval", ApprovalChoice.ONCE) }
            assertEquals(401, refused.status)
            assertNotEquals(ConnectionState.Failed::class, wrong.state.value::class, "HTTP failures do not touch the socket's state")
        }
    }
}
