package dev.pheby.client

import dev.pheby.protocol.ApprovalChoice
import dev.pheby.protocol.ApprovalRequest
import dev.pheby.protocol.ApprovalResolved
import dev.pheby.protocol.MessageComplete
import dev.pheby.protocol.MessageKind
import dev.pheby.protocol.OptionalNullable
import dev.pheby.protocol.RunFinished
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.async
import kotlinx.coroutines.flow.onEach
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.flow.transformWhile
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.AfterAll
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import kotlin.time.Duration.Companion.seconds

/**
 * The `expiry` extension against the real server: the simulator's `/sim timeout` approval expires after
 * its 5 s (`approvalTimeoutMs`), so `expires_at` is known, and it really expires (awaited, never slept).
 */
class ExpiryTest : ServerTest() {
    /** A client that asked for `expiry` (the default [client] did not). */
    private val expiring = runBlocking { server.client { copy(features = features + Features.EXPIRY) } }

    @AfterAll
    fun closeExpiring() = expiring.close()

    @Test
    fun `with expiry an approval carries expires_at, in history too, and expires with a notice - v1 sees neither`() = blocking {
        assertTrue(Features.EXPIRY in expiring.features)
        assertFalse(Features.EXPIRY in client.features, "not asked for by default")
        val id = newConversation("Expiring")
        val v1Frames = async(start = CoroutineStart.UNDISPATCHED) {
            client.events.transformWhile { m ->
                if (m.conversationIdOrNull() == id || m is ApprovalRequest || m is ApprovalResolved) emit(m)
                !(m is RunFinished && m.conversationId == id)
            }.toList()
        }
        val asked = CompletableDeferred<ApprovalRequest>()
        val run = async { expiring.chat(id, "/sim timeout").onEach { if (it is ApprovalRequest) asked.complete(it) }.toList() }

        val request = asked.await()
        val expiresAt = (request.expiresAt as OptionalNullable.Value).value
        assertEquals(5.seconds, request.expiresIn, "expires_at − ts: the simulator's wait, on the server's clock")
        // While it is pending, the snapshot lists it with the same expires_at; only for expiry connections.
        val pending = expiring.openConversation(id).approvals.single()
        assertEquals(OptionalNullable.Value(expiresAt), pending.expiresAt)
        assertEquals(5.seconds, pending.expiresIn)
        val v1Pending = client.openConversation(id).approvals.single()
        assertEquals(OptionalNullable.Absent, v1Pending.expiresAt)
        assertNull(v1Pending.expiresIn)

        val frames = run.await()
        assertEquals("The approval timed out and was withdrawn, so nothing ran.", checkRun(frames))
        val withdrawal = frames.filterIsInstance<ApprovalResolved>().single()
        assertFalse(withdrawal.accepted)
        assertEquals(ApprovalChoice.DENY, withdrawal.choice)
        assertTrue(frames.any { it is MessageComplete && it.kind == MessageKind.NOTICE }, "a notice says it expired: $frames")
        expectPheby("approval_not_found") { expiring.respondToApproval(request.approvalId, ApprovalChoice.ONCE) }

        // v1, byte for byte: the same question without expires_at, the same withdrawal, no expiry notice.
        val v1 = v1Frames.await()
        val v1Request = v1.filterIsInstance<ApprovalRequest>().single { it.approvalId == request.approvalId }
        assertEquals(request.copy(expiresAt = OptionalNullable.Absent, seq = null), v1Request.copy(seq = null))
        assertNull(v1Request.expiresIn)
        assertTrue(v1.any { it is ApprovalResolved && it.approvalId == request.approvalId && !it.accepted })
        assertTrue(v1.none { it is MessageComplete && it.kind == MessageKind.NOTICE }, "the expiry notice is for expiry connections: $v1")
    }
}
