package dev.pheby.client

import dev.pheby.protocol.ApprovalChoice
import dev.pheby.protocol.ApprovalRequest
import dev.pheby.protocol.ApprovalResolved
import dev.pheby.protocol.ClarifyRequest
import dev.pheby.protocol.ClarifyResolved
import dev.pheby.protocol.RunStatus
import dev.pheby.protocol.ServerMessage
import dev.pheby.protocol.ToolEvent
import dev.pheby.protocol.ToolStatus
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.async
import kotlinx.coroutines.flow.onEach
import kotlinx.coroutines.flow.toList
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

/** Approvals (every choice) and clarifications (choice and free text) through [PhebyClient.chat]. */
class DecisionsTest : ServerTest() {

    /** Runs [text] in [conversationId], answering each question with [answer]; returns the run's frames. */
    private suspend fun run(
        conversationId: String,
        text: String,
        answer: suspend (ServerMessage) -> Unit = {},
    ): List<ServerMessage> = client.chat(conversationId, text).onEach { answer(it) }.toList()

    private suspend fun approving(choice: ApprovalChoice, reason: String? = null): suspend (ServerMessage) -> Unit = { m ->
        if (m is ApprovalRequest) {
            val resolved = client.respondToApproval(m.approvalId, choice, reason)
            assertEquals(choice, resolved.choice)
            assertTrue(resolved.accepted)
        }
    }

    @Test
    fun `once - the request reaches every client and the snapshot, one resolution for all, a second answer is approval_not_found`() = blocking {
        server.client().use { other ->
            val id = newConversation()
            val seen = async(start = CoroutineStart.UNDISPATCHED) { other.events.firstOf<ApprovalResolved>() }
            val frames = run(id, "/sim approval") { m ->
                if (m is ApprovalRequest) {
                    assertEquals(ApprovalChoice.entries, m.choices)
                    assertTrue(other.openConversation(id).approvals.any { it.approvalId == m.approvalId }, "the snapshot lists it")
                    client.respondToApproval(m.approvalId, ApprovalChoice.ONCE)
                    expectPheby("approval_not_found") { other.respondToApproval(m.approvalId, ApprovalChoice.DENY) }
                }
            }
            assertEquals("Approved (once): I ran `rm -rf /tmp/pheby-sim-build`.", checkRun(frames))
            assertEquals(1, frames.count { it is ApprovalResolved }, "the run's flow carries the one resolution")
            assertEquals(ApprovalChoice.ONCE, seen.await().choice)
            assertEquals(listOf(ToolStatus.RUNNING, ToolStatus.COMPLETED), frames.filterIsInstance<ToolEvent>().map { it.status })
        }
    }

    @Test
    fun `session - approved for the conversation, so the next approval there is not asked`() = blocking {
        val id = newConversation()
        assertEquals("Approved (session): I ran `rm -rf /tmp/pheby-sim-build`.", checkRun(run(id, "/sim approval", approving(ApprovalChoice.SESSION))))
        val again = run(id, "/sim approval")
        assertTrue(again.none { it is ApprovalRequest })
        assertTrue(checkRun(again).contains("without asking"), "the agent remembers the session approval")
    }

    @Test
    fun `deny with a reason - the tool fails and the agent is told why`() = blocking {
        val frames = run(newConversation(), "/sim approval", approving(ApprovalChoice.DENY, "not on a Friday"))
        val answer = checkRun(frames)
        assertTrue(answer.startsWith("Denied: I did not run"), answer)
        assertTrue(answer.contains("Your reason: \"not on a Friday\"."), answer)
        assertEquals("Denied by the user", frames.filterIsInstance<ToolEvent>().last().error)
    }

    @Test
    fun `always - approved everywhere, so another conversation is not asked either`() = blocking {
        // "always" lasts until the server restarts: a server of its own keeps it from the other tests.
        PhebyServer().start().use { own ->
            own.client().use { c ->
                val first = c.chat(c.createConversation().conversationId, "/sim approval").onEach { m ->
                    if (m is ApprovalRequest) c.respondToApproval(m.approvalId, ApprovalChoice.ALWAYS)
                }.toList()
                assertEquals("Approved (always): I ran `rm -rf /tmp/pheby-sim-build`.", checkRun(first))
                val elsewhere = c.chat(c.createConversation().conversationId, "/sim approval").toList()
                assertTrue(elsewhere.none { it is ApprovalRequest })
                checkRun(elsewhere)
            }
        }
    }

    @Test
    fun `a choice the agent does not offer is accepted as sent and applied as the nearest it offers`() = blocking {
        val frames = run(newConversation(), "/sim approval limited") { m ->
            if (m is ApprovalRequest) {
                assertEquals(listOf(ApprovalChoice.ONCE, ApprovalChoice.DENY), m.choices)
                assertEquals(ApprovalChoice.ALWAYS, client.respondToApproval(m.approvalId, ApprovalChoice.ALWAYS).choice)
            }
        }
        assertTrue(checkRun(frames).startsWith("Approved (once"), "applied as once")
    }

    @Test
    fun `cancelling a run withdraws its pending approval before the run ends`() = blocking {
        val id = newConversation()
        var approvalId = ""
        val frames = run(id, "/sim approval") { m ->
            if (m is ApprovalRequest) {
                approvalId = m.approvalId
                client.cancelRun(id, m.runId!!)
            }
        }
        checkRun(frames, RunStatus.CANCELLED)
        val withdrawal = frames.filterIsInstance<ApprovalResolved>().single()
        assertFalse(withdrawal.accepted)
        assertEquals(ApprovalChoice.DENY, withdrawal.choice)
        expectPheby("approval_not_found") { client.respondToApproval(approvalId, ApprovalChoice.ONCE) }
        assertTrue(client.openConversation(id).approvals.isEmpty())
    }

    @Test
    fun `an approval the agent times out is announced as withdrawn and then unknown`() = blocking {
        var approvalId = ""
        val frames = run(newConversation(), "/sim timeout") { m -> if (m is ApprovalRequest) approvalId = m.approvalId }
        assertEquals("The approval timed out and was withdrawn, so nothing ran.", checkRun(frames))
        val withdrawal = frames.filterIsInstance<ApprovalResolved>().single()
        assertFalse(withdrawal.accepted)
        assertEquals(null, withdrawal.requestId)
        expectPheby("approval_not_found") { client.respondToApproval(approvalId, ApprovalChoice.ONCE) }
    }

    @Test
    fun `clarify with a choice - resolved once and echoed, a second answer is clarify_not_found`() = blocking {
        val frames = run(newConversation(), "/sim clarify") { m ->
            if (m is ClarifyRequest) {
                assertEquals(listOf("staging", "production"), m.choices)
                assertTrue(client.respondToClarification(m.clarifyId, "production").accepted)
                expectPheby("clarify_not_found") { client.respondToClarification(m.clarifyId, "staging") }
            }
        }
        assertEquals("You answered: \"production\".", checkRun(frames))
        assertEquals(1, frames.count { it is ClarifyResolved })
    }

    @Test
    fun `clarify with free text, on a free-text question and on a choices-only one`() = blocking {
        val free = run(newConversation(), "/sim clarify free") { m ->
            if (m is ClarifyRequest) {
                assertEquals(null, m.choices)
                client.respondToClarification(m.clarifyId, "Kotlin release")
            }
        }
        assertEquals("You answered: \"Kotlin release\".", checkRun(free))
        val other = run(newConversation(), "/sim clarify choices") { m ->
            if (m is ClarifyRequest) {
                assertFalse(m.allowFreeText)
                client.respondToClarification(m.clarifyId, "neither, thanks")
            }
        }
        assertEquals("You answered in your own words: \"neither, thanks\".", checkRun(other))
    }

    @Test
    fun `unknown question IDs are typed errors`() = blocking {
        expectPheby("approval_not_found") { client.respondToApproval("no-such-approval", ApprovalChoice.ONCE) }
        expectPheby("clarify_not_found") { client.respondToClarification("no-such-question", "yes") }
    }
}
