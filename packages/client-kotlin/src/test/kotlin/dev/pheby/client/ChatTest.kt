package dev.pheby.client

import dev.pheby.protocol.ClientMessage
import dev.pheby.protocol.ConversationDeleted
import dev.pheby.protocol.ConversationRenamed
import dev.pheby.protocol.ConversationUpdated
import dev.pheby.protocol.FEATURE_DELTA_APPEND
import dev.pheby.protocol.MessageComplete
import dev.pheby.protocol.MessageDelta
import dev.pheby.protocol.MessageKind
import dev.pheby.protocol.MessageRole
import dev.pheby.protocol.ModelChanged
import dev.pheby.protocol.OptionalNullable
import dev.pheby.protocol.ReasoningEffort
import dev.pheby.protocol.RunAccepted
import dev.pheby.protocol.RunFinished
import dev.pheby.protocol.RunStatus
import dev.pheby.protocol.ServerMessage
import dev.pheby.protocol.SettingScope
import dev.pheby.protocol.ToolEvent
import dev.pheby.protocol.ToolStatus
import dev.pheby.protocol.YoloChanged
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.async
import kotlinx.coroutines.flow.onEach
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.flow.transformWhile
import kotlinx.serialization.json.buildJsonObject
import kotlinx.serialization.json.jsonPrimitive
import kotlinx.serialization.json.put
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

/**
 * The conversation, run, settings and error flows of the conformance suite (packages/conformance),
 * driven through [PhebyClient] against the real pheby-server with the simulator.
 */
class ChatTest : ServerTest() {

    @Test
    fun `hello asks for the default extensions and the server enables them, a client that asks for nothing gets v1`() = blocking {
        val state = client.state.value as ConnectionState.Open
        val served = setOf(FEATURE_DELTA_APPEND, Features.PUSH, Features.RESUME, Features.QUEUE, Features.ACTIVITY, Features.MODES, Features.INBOX)
        // workspaces and changes are asked for too; the server enables them once it implements them.
        assertTrue(state.features.containsAll(served), "${state.features}")
        assertTrue(Features.DEFAULTS.containsAll(state.features), "only what was asked for: ${state.features}")
        assertEquals(state.features, state.ready.features.orEmpty().toSet())
        server.client { copy(features = emptySet()) }.use { v1 ->
            val ready = (v1.state.value as ConnectionState.Open).ready
            assertNull(ready.features, "ready carries no features when hello asked for none")
            assertNull(ready.push, "nor the VAPID key")
            assertEquals(emptySet<String>(), v1.features)
        }
    }

    @Test
    fun `a chat streams run_accepted, cumulative deltas, message_complete and one run_finished, and lands in history`() = blocking {
        val id = newConversation()
        val frames = client.chat(id, "Hello from the Kotlin client").toList()
        val final = checkRun(frames)
        assertTrue(final.startsWith("You said: \"Hello from the Kotlin client\""), final)
        assertTrue(frames.any { it is MessageDelta }, "the answer streamed")
        val history = client.openConversation(id)
        assertEquals(listOf(MessageRole.USER, MessageRole.ASSISTANT), history.messages.map { it.role })
        assertEquals(final, history.messages.last().text)
        assertNull(history.run)
    }

    @Test
    fun `append deltas are stitched into drafts, and each v1 draft is one of them`() = blocking {
        server.client { copy(features = emptySet()) }.use { v1 ->
            val id = newConversation()
            // The v1 client watches the same conversation's deltas until the run ends.
            val seen = async(start = CoroutineStart.UNDISPATCHED) {
                v1.events.transformWhile { m ->
                    if (m is MessageDelta && m.conversationId == id) emit(m.text)
                    !(m is RunFinished && m.conversationId == id)
                }.toList()
            }
            // 70,000 characters in several chunks: offsets far beyond deflate's 32 KiB window.
            val frames = client.chat(id, "/sim long 70000").toList()
            val final = checkRun(frames)
            assertEquals(70_000, final.length)
            // A v1 connection may get fewer deltas of a long answer (docs/protocol.md), never other
            // ones: each of its drafts is, in order, a draft the append connection held.
            val drafts = frames.filterIsInstance<MessageDelta>().map { it.text }
            val v1Drafts = seen.await()
            assertTrue(v1Drafts.isNotEmpty())
            var from = 0
            for (text in v1Drafts) {
                val at = drafts.subList(from, drafts.size).indexOf(text)
                assertTrue(at >= 0, "a v1 draft of ${text.length} characters the append connection never held")
                from += at + 1
            }
        }
    }

    @Test
    fun `tools arrive as tool events - running then completed or failed, arguments redacted`() = blocking {
        val frames = client.chat(newConversation(), "/sim tools").toList()
        assertEquals("I ran two tools: web_search completed and read_file failed.", checkRun(frames))
        val tools = frames.filterIsInstance<ToolEvent>().groupBy { it.toolName }
        val search = tools.getValue("web_search")
        assertEquals(listOf(ToolStatus.RUNNING, ToolStatus.COMPLETED), search.map { it.status })
        assertEquals("[REDACTED]", search.first().argsRedacted!!.getValue("api_key").jsonPrimitive.content)
        assertEquals(OptionalNullable.Absent, search.first().durationMs, "no duration while running")
        assertTrue(search.last().durationMs is OptionalNullable.Value, "a duration once finished")
        val read = tools.getValue("read_file")
        assertEquals(listOf(ToolStatus.RUNNING, ToolStatus.FAILED), read.map { it.status })
        assertEquals("Permission denied (simulated)", read.last().error)
    }

    @Test
    fun `a notice is a message_complete of kind notice, a failed run ends failed with its error`() = blocking {
        val noticed = client.chat(newConversation(), "/sim notice").toList()
        assertEquals("This is the answer that follows the notice.", checkRun(noticed))
        assertTrue(noticed.any { it is MessageComplete && it.kind == MessageKind.NOTICE })
        val failed = client.chat(newConversation(), "/sim fail").toList()
        checkRun(failed, RunStatus.FAILED)
        assertEquals("Simulated failure (/sim fail)", (failed.last() as RunFinished).error)
    }

    @Test
    fun `output outside any run arrives as a server-initiated run on events`() = blocking {
        val id = newConversation()
        // Everything of the conversation until its second run (the unsolicited one) has finished.
        val later = async(start = CoroutineStart.UNDISPATCHED) {
            var finished = 0
            client.events.transformWhile { m ->
                if (m.conversationIdOrNull() == id) emit(m)
                !(m is RunFinished && m.conversationId == id && ++finished == 2)
            }.toList()
        }
        checkRun(client.chat(id, "/sim later").toList())
        val frames = later.await()
        val unsolicited = frames.filterIsInstance<RunAccepted>().single { it.requestId == null }
        val run = frames.dropWhile { it != unsolicited }
        assertEquals(
            "This message arrived later, outside any run (/sim later).",
            checkRun(run),
        )
    }

    @Test
    fun `cancel ends the run once, a second cancel and a send meanwhile are typed errors, the conversation goes on`() = blocking {
        val id = newConversation()
        var runId = ""
        val frames = client.chat(id, "/sim slow").onEach { m ->
            if (m is RunAccepted) runId = m.runId
            if (m is MessageDelta && m.text.split(' ').size == 2) {
                expectPheby("run_active") { client.sendMessage(id, "second") }
                val finished = client.cancelRun(id, runId)
                assertEquals(RunStatus.CANCELLED, finished.status)
            }
        }.toList()
        checkRun(frames, RunStatus.CANCELLED)
        expectPheby("not_found") { client.cancelRun(id, runId) }
        assertNull(client.openConversation(id).run)
        checkRun(client.chat(id, "/sim long 1").toList())
    }

    @Test
    fun `bad requests get the protocol's typed errors and the connection stays usable`() = blocking {
        val id = newConversation()
        expectPheby("conversation_not_found") { client.openConversation(UNKNOWN_ID) }
        expectPheby("conversation_not_found") { client.sendMessage(UNKNOWN_ID, "hello") }
        expectPheby("bad_request") { client.sendMessage(id, "   ") }
        expectPheby("bad_request") { client.openConversation(id, limit = 0) }
        // Chat text: 64,000 code points is the limit; one more is too_large.
        expectPheby("too_large") { client.sendMessage(id, "a".repeat(64_001)) }
        val accepted = client.sendMessage(id, "a".repeat(64_000))
        client.cancelRun(id, accepted.runId)
        // A type the server does not know (e.g. an extension it lacks) is unknown_type.
        val unknown = ClientMessage.Unknown(buildJsonObject { put("type", "x.kotlin.no_such_type") })
        expectPheby("unknown_type") { client.request<ServerMessage.Unknown>(unknown) }
        client.ping()
    }

    @Test
    fun `conversations are created, listed, renamed and deleted, with broadcasts to every client`() = blocking {
        server.client().use { other ->
            val updated = async(start = CoroutineStart.UNDISPATCHED) { other.events.firstOf<ConversationUpdated>() }
            val created = client.createConversation("Kotlin A")
            assertTrue(Regex("^[0-9a-f]{32}$").matches(created.conversationId))
            assertEquals(created.conversationId, updated.await().conversationId)
            assertTrue(client.listConversations().conversations.any { it.conversationId == created.conversationId && it.name == "Kotlin A" })

            val renamed = async(start = CoroutineStart.UNDISPATCHED) { other.events.firstOf<ConversationRenamed>() }
            assertEquals("Kotlin B", client.renameConversation(created.conversationId, "Kotlin B").name)
            assertNull(renamed.await().requestId, "the broadcast carries no request_id")
            assertEquals("Kotlin B", other.listConversations().conversations.single { it.conversationId == created.conversationId }.name)

            val deleted = async(start = CoroutineStart.UNDISPATCHED) { other.events.firstOf<ConversationDeleted>() }
            client.deleteConversation(created.conversationId)
            assertEquals(created.conversationId, deleted.await().conversationId)
            expectPheby("conversation_not_found") { client.openConversation(created.conversationId) }
        }
    }

    @Test
    fun `history pages backwards without gaps or duplicates, an unknown cursor is bad_request`() = blocking {
        val id = newConversation()
        repeat(6) { checkRun(client.chat(id, "/sim long 1").toList()) }
        val full = client.openConversation(id, limit = 500)
        assertEquals(12, full.messages.size)
        assertFalse(full.hasMore)
        val pages = ArrayDeque<List<String>>()
        var before: String? = null
        do {
            val page = client.openConversation(id, limit = 5, beforeMessageId = before)
            assertTrue(page.messages.size <= 5)
            pages.addFirst(page.messages.map { it.messageId })
            before = page.messages.first().messageId
        } while (page.hasMore)
        assertEquals(full.messages.map { it.messageId }, pages.flatten())
        assertEquals(5, pages.last().size, "the first page is the newest five")
        expectPheby("bad_request") { client.openConversation(id, beforeMessageId = "no-such-message-id") }
    }

    @Test
    fun `models and reasoning - a conversation override is broadcast and used by the next turn`() = blocking {
        server.client().use { other ->
            val id = newConversation()
            val list = client.listModels(id)
            val models = list.providers.flatMap { p -> p.models.map { it to p.slug } }
            val (model, provider) = models.first { it.first != list.currentModel }
            val broadcast = async(start = CoroutineStart.UNDISPATCHED) { other.events.firstOf<ModelChanged> { it.requestId == null } }
            val changed = client.setModel(model, provider, id)
            assertEquals(SettingScope.CONVERSATION, changed.scope)
            assertEquals(model, broadcast.await().model)
            assertEquals(model, client.currentModel(id).model)
            expectPheby("bad_request") { client.setModel("no/such-model", conversationId = id) }

            assertTrue(ReasoningEffort.HIGH in client.currentReasoning(id).supportedEfforts)
            assertEquals(ReasoningEffort.HIGH, client.setReasoning(ReasoningEffort.HIGH, id).effort)
            val answer = checkRun(client.chat(id, "Which settings?").toList())
            assertTrue(answer.endsWith("[model: $model ($provider), reasoning: high]"), answer)
        }
    }

    @Test
    fun `YOLO is per conversation, broadcast, and answers approvals itself`() = blocking {
        server.client().use { other ->
            val id = newConversation()
            assertFalse(client.currentYolo(id).enabled)
            val broadcast = async(start = CoroutineStart.UNDISPATCHED) { other.events.firstOf<YoloChanged> { it.requestId == null } }
            assertTrue(client.setYolo(id, true).enabled)
            assertEquals(id, broadcast.await().conversationId)
            assertTrue(other.currentYolo(id).enabled)
            val frames = client.chat(id, "/sim approval").toList()
            assertEquals("Approved (once): I ran `rm -rf /tmp/pheby-sim-build`.", checkRun(frames))
            assertTrue(frames.none { it is dev.pheby.protocol.ApprovalRequest }, "no approval is asked with YOLO on")
            client.setYolo(id, false)
            expectPheby("conversation_not_found") { client.currentYolo(UNKNOWN_ID) }
        }
    }

}

/** A conversation ID no server has: 32 hex characters, like real ones. */
const val UNKNOWN_ID = "0123456789abcdef0123456789abcdef"

/** The conversation a frame belongs to, for the types that name one. */
fun ServerMessage.conversationIdOrNull(): String? = when (this) {
    is RunAccepted -> conversationId
    is dev.pheby.protocol.MessageStart -> conversationId
    is MessageDelta -> conversationId
    is MessageComplete -> conversationId
    is RunFinished -> conversationId
    is ToolEvent -> conversationId
    else -> null
}
