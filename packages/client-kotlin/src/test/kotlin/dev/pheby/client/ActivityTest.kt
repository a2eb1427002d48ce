package dev.pheby.client

import dev.pheby.protocol.ApprovalChoice
import dev.pheby.protocol.ApprovalRequest
import dev.pheby.protocol.RunFinished
import dev.pheby.protocol.ToolDiffBlock
import dev.pheby.protocol.ToolEvent
import dev.pheby.protocol.ToolKind
import dev.pheby.protocol.ToolLocation
import dev.pheby.protocol.ToolStatus
import dev.pheby.protocol.ToolTextBlock
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.async
import kotlinx.coroutines.flow.filter
import kotlinx.coroutines.flow.onEach
import kotlinx.coroutines.flow.takeWhile
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.AfterAll
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

/**
 * The `activity` extension against the real server's simulator: an edit whose approval previews its
 * diff (`/sim diff`), a command whose output arrives redacted (`/sim output`), `tool.get` and the
 * history's tools with the same detail, and a client without the feature that gets none of it.
 */
class ActivityTest : ServerTest() {
    /** A client that left `activity` out of its features. */
    private val plain = runBlocking { server.client { copy(features = features - Features.ACTIVITY) } }

    @AfterAll
    fun closePlain() = plain.close()

    @Test
    fun `an edit's approval previews its diff, the tool event carries it, tool_get and history give the call's latest state`() = blocking {
        assertTrue(Features.ACTIVITY in client.features, "asked for by default")
        val id = newConversation("Diff")
        val calls = LinkedHashMap<String, ToolEvent>()
        val frames = client.chat(id, "/sim diff").onEach { event ->
            when (event) {
                is ToolEvent -> calls[event.toolCallId] = event.withContentOf(calls[event.toolCallId])
                is ApprovalRequest -> client.respondToApproval(event.approvalId, ApprovalChoice.ONCE)
                else -> Unit
            }
        }.toList()
        assertEquals("I edited src/greeting.ts: the greeting has a comma now, and the version is 2.", checkRun(frames))

        val approval = frames.filterIsInstance<ApprovalRequest>().single()
        val diff = approval.preview!!.single() as ToolDiffBlock
        assertEquals("src/greeting.ts", diff.path, "relative to the path base")
        assertEquals("src/greeting.ts", diff.display)
        assertFalse(diff.outside)
        assertFalse(diff.fragment, "the whole file")
        assertFalse(diff.truncated)
        assertEquals(2L, diff.additions)
        assertEquals(2L, diff.deletions)
        assertTrue(diff.patch.contains("-  return \"Hello \" + name;\n+  return `Hello, \${name}!`;"), diff.patch)
        assertTrue(diff.patch.contains("-export const version = 1;\n+export const version = 2;"), diff.patch)

        val call = calls.values.single()
        assertEquals(approval.toolCallId, call.toolCallId, "the approval names the call it is about")
        assertEquals(ToolStatus.COMPLETED, call.status)
        assertEquals(ToolKind.EDIT, call.kind)
        assertEquals("Edit src/greeting.ts", call.title)
        assertEquals(listOf(ToolLocation(path = "src/greeting.ts", line = 2, outside = false)), call.locations)
        assertEquals(approval.preview, call.content, "the content as it stands, kept by withContentOf")

        val got = client.getTool(id, call.toolCallId)
        assertEquals(call.toolCallId, got.toolCallId)
        assertEquals(ToolStatus.COMPLETED, got.status)
        assertEquals(call.content, got.content)
        assertEquals(call.kind, got.kind)
        val recorded = client.openConversation(id).tools.single { it.toolCallId == call.toolCallId }
        assertEquals(call.content, recorded.content)
        assertEquals(call.locations, recorded.locations)
    }

    @Test
    fun `a command's output arrives redacted, and a client without activity gets the same run without any detail`() = blocking {
        val id = newConversation("Output")
        val v1 = async(start = CoroutineStart.UNDISPATCHED) {
            plain.events.filter { it.conversationIdOrNull() == id }.takeWhile { !(it is RunFinished && it.conversationId == id) }.toList()
        }
        val frames = client.chat(id, "/sim output").toList()
        assertEquals("The tests passed: 3 of 3.", checkRun(frames))
        val done = frames.filterIsInstance<ToolEvent>().last()
        assertEquals(ToolStatus.COMPLETED, done.status)
        assertEquals(ToolKind.EXECUTE, done.kind)
        assertEquals("npm test", done.title)
        val output = done.content!!.single() as ToolTextBlock
        assertTrue(output.text.contains("Tests  3 passed (3)"), output.text)
        assertFalse(output.text.contains("sk-simulated-0123456789abcdef"), "a secret in the output is redacted")
        assertFalse(output.truncated)

        val tools = v1.await().filterIsInstance<ToolEvent>()
        assertEquals(frames.filterIsInstance<ToolEvent>().size, tools.size, "the same tool events")
        for (event in tools) {
            assertNull(event.kind)
            assertNull(event.title)
            assertNull(event.locations)
            assertNull(event.content)
        }
        expectPheby("unknown_type") { plain.getTool(id, done.toolCallId) }
        expectPheby("not_found") { client.getTool(id, "no-such-call") }
        assertNull(plain.openConversation(id).tools.single().content, "nor in the history")
    }
}
