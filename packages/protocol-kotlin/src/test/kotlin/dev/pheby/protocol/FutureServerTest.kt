package dev.pheby.protocol

import kotlinx.serialization.SerializationException
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.buildJsonObject
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.put
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertInstanceOf
import org.junit.jupiter.api.Assertions.assertSame
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.DynamicTest
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestFactory
import java.io.File

/**
 * Frames from a "future" server (`packages/protocol/fixtures/future/server`): a message type, enum values
 * and fields v1 does not define. An app built with these models must decode each one, keep every known
 * part, and re-encode it without loss.
 */
class FutureServerTest {
    private val dir = File(System.getProperty("pheby.fixtures") ?: "../protocol/fixtures", "future/server")

    /** The fixture's frame, as the server would send it (compact JSON). */
    private fun frame(name: String): JsonObject =
        PhebyJson.parseToJsonElement(File(dir, name).readText()).jsonObject.getValue("frame").jsonObject

    private fun decode(name: String): ServerMessage = decodeServerMessage(frame(name).toString())

    @TestFactory
    fun `every future frame decodes and re-encodes without loss`(): List<DynamicTest> {
        val files = dir.listFiles { f -> f.name.endsWith(".json") }?.sortedBy { it.name }.orEmpty()
        assertTrue(files.size >= 9, "future fixtures missing in $dir")
        return files.map { file ->
            DynamicTest.dynamicTest(file.name) {
                val frame = frame(file.name)
                val reencoded = PhebyJson.parseToJsonElement(decodeServerMessage(frame.toString()).toJson())
                // Unknown fields (named x_*) are the only thing a tolerant reader drops.
                assertEquals(frame.withoutUnknownFields(), reencoded)
            }
        }
    }

    private fun JsonObject.withoutUnknownFields(): JsonObject = JsonObject(
        filterKeys { !it.startsWith("x_") }.mapValues { (_, v) ->
            when (v) {
                is JsonObject -> v.withoutUnknownFields()
                is JsonArray -> JsonArray(v.map { (it as? JsonObject)?.withoutUnknownFields() ?: it })
                else -> v
            }
        },
    )

    @Test
    fun `an unknown message type decodes to ServerMessage Unknown, kept byte for byte`() {
        val text = frame("unknown-type.json").toString()
        val message = decodeServerMessage(text)
        assertInstanceOf(ServerMessage.Unknown::class.java, message)
        message as ServerMessage.Unknown
        assertEquals("run.paused", message.type)
        assertEquals("r7", message.requestId) // a reply of an unknown type still correlates
        assertEquals(text, message.toJson()) // 1.5e4 stays 1.5e4, nested null stays null
        assertTrue(text.contains("1.5e4"))
    }

    @Test
    fun `an unknown error code keeps the message and the raw code`() {
        val error = decode("error-unknown-code.json") as ProtocolError
        assertEquals("r1", error.requestId)
        assertEquals("Daily quota exceeded", error.error.message)
        assertInstanceOf(ErrorCode.Unknown::class.java, error.error.code)
        assertEquals("quota_exceeded", error.error.code.value)
        assertEquals(ErrorCode.of("quota_exceeded"), error.error.code)
    }

    @Test
    fun `an unknown reasoning effort is kept in effort and among supported_efforts, and can be sent back`() {
        val snapshot = decode("reasoning-snapshot-unknown-effort.json") as ReasoningSnapshot
        val adaptive = snapshot.effort
        assertInstanceOf(ReasoningEffort.Unknown::class.java, adaptive)
        assertEquals(listOf(ReasoningEffort.LOW, ReasoningEffort.MEDIUM, adaptive, ReasoningEffort.HIGH), snapshot.supportedEfforts)
        assertEquals(SettingScope.CONVERSATION, snapshot.scope)
        assertEquals(true, snapshot.enabled)
        // An app may offer the server's new level back to it unchanged.
        val set = ReasoningSet(effort = snapshot.supportedEfforts[2], conversationId = snapshot.conversationId)
        assertEquals("""{"type":"reasoning.set","effort":"adaptive","conversation_id":"a1b2c3d4e5f60718293a4b5c6d7e8f90"}""", set.toJson())
    }

    @Test
    fun `an unknown attachment kind keeps the rest of the descriptor`() {
        val added = decode("attachment-added-unknown-kind.json") as AttachmentAdded
        assertEquals("hologram", added.attachment.kind.value)
        assertInstanceOf(AttachmentKind.Unknown::class.java, added.attachment.kind)
        assertEquals("scene.holo", added.attachment.filename)
        assertEquals(AttachmentDirection.OUTBOUND, added.attachment.direction)
        assertEquals("/attachments/e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0", added.attachment.downloadPath)
    }

    @Test
    fun `an unknown run status keeps the run and its error`() {
        val finished = decode("run-finished-unknown-status.json") as RunFinished
        assertEquals("8c1f2e3d4c5b6a798877665544332211", finished.runId)
        assertEquals("Server restarting", finished.error)
        assertEquals("interrupted", finished.status.value)
        assertEquals("the run ended (interrupted)", describe(finished.status))
    }

    @Test
    fun `unknown tool statuses, approval choices and message kinds decode too`() {
        assertEquals("queued", (decode("tool-event-unknown-status.json") as ToolEvent).status.value)
        val approval = decode("approval-request-unknown-choice.json") as ApprovalRequest
        assertEquals(listOf("once", "project", "deny"), approval.choices.map { it.value })
        assertSame(ApprovalChoice.ONCE, approval.choices[0])
        assertInstanceOf(ApprovalChoice.Unknown::class.java, approval.choices[1])
        val complete = decode("message-complete-unknown-kind.json") as MessageComplete
        assertEquals("summary", complete.kind?.value)
        assertEquals("Summary of the conversation so far", complete.text)
    }

    @Test
    fun `unknown fields on a known message and inside nested objects are ignored`() {
        val history = decode("history-unknown-fields.json") as ConversationHistory
        assertEquals(listOf(HistoryMessage(messageId = "m1", role = MessageRole.USER, text = "What's the weather?", ts = "2026-09-02T18:00:00+00:00")), history.messages)
        assertEquals(false, history.hasMore)
    }

    @Test
    fun `modes and thoughts of a newer server keep every known field`() {
        val modes = decode("modes-snapshot-unknown-fields.json") as ModesSnapshot
        assertTrue(modes.modes.isNotEmpty())
        assertEquals(modes, decodeServerMessage(modes.toJson()), "nothing known is lost on the way back")
        val commands = decode("commands-snapshot-unknown-fields.json") as CommandsSnapshot
        assertEquals(commands, decodeServerMessage(commands.toJson()))
        assertInstanceOf(ModeChanged::class.java, decode("mode-changed-unknown-fields.json"))
        val delta = decode("thought-delta-unknown-fields.json") as ThoughtDelta
        assertEquals(delta.text, delta.applyTo("anything"), "offset 0: the whole thought")
        assertInstanceOf(ThoughtComplete::class.java, decode("thought-complete-unknown-fields.json"))
        val history = decode("history-thought-unknown-fields.json") as ConversationHistory
        assertTrue(history.thoughts!!.isNotEmpty())
    }

    @Test
    fun `a newer server's tool kind, content block type and plan values decode to Unknown, the rest kept`() {
        val browse = decode("tool-event-unknown-kind.json") as ToolEvent
        assertInstanceOf(ToolKind.Unknown::class.java, browse.kind)
        assertEquals("browse", browse.kind?.value)
        assertEquals("t1", browse.toolCallId)
        val image = decode("tool-event-unknown-block-type.json") as ToolEvent
        val block = assertInstanceOf(ToolContentBlock.Unknown::class.java, image.content!!.single())
        assertEquals("image", block.type)
        assertEquals("image/png", block.json.stringOrNull("mime_type"))
        assertEquals(ToolStatus.COMPLETED, image.status)
        val urgent = decode("plan-updated-unknown-priority.json") as PlanUpdated
        assertInstanceOf(PlanEntryPriority.Unknown::class.java, urgent.entries.single().priority)
        assertEquals(PlanEntryStatus.PENDING, urgent.entries.single().status)
        val status = decode("plan-updated-unknown-status.json") as PlanUpdated
        assertInstanceOf(PlanEntryStatus.Unknown::class.java, status.entries.single().status)
        assertEquals(describe(block), "a block of a newer server (image)")
    }

    /** Exhaustive without `else` over every content block, `Unknown` being one more branch. */
    private fun describe(block: ToolContentBlock): String = when (block) {
        is ToolDiffBlock -> "diff of ${block.display}"
        is ToolTextBlock -> "text"
        is ToolOtherBlock -> block.label
        is ToolContentBlock.Unknown -> "a block of a newer server (${block.type})"
    }

    /** Exhaustive without `else`: the compiler checks every known value plus `Unknown` is handled. */
    private fun describe(status: RunStatus): String = when (status) {
        RunStatus.COMPLETED -> "done"
        RunStatus.CANCELLED -> "cancelled"
        RunStatus.FAILED -> "failed"
        is RunStatus.Unknown -> "the run ended (${status.value})"
    }

    /** Exhaustive without `else` over every server message, `Unknown` being one more branch. */
    private fun kindOf(message: ServerMessage): String = when (message) {
        is Ready, is Pong, is ProtocolError -> "connection"
        is ConversationSnapshot, is ConversationCreated, is ConversationUpdated, is ConversationHistory,
        is ConversationRenamed, is ConversationDeleted -> "conversation"
        is RunAccepted, is MessageStart, is MessageDelta, is MessageComplete, is RunFinished, is ToolEvent -> "run"
        is ApprovalRequest, is ApprovalResolved, is ClarifyRequest, is ClarifyResolved -> "prompt"
        is YoloSnapshot, is YoloChanged, is ModelsSnapshot, is ModelCurrent, is ModelChanged,
        is ReasoningSnapshot, is ReasoningChanged -> "setting"
        is AttachmentAdded -> "attachment"
        is PushSubscribed, is PushUnsubscribed, is PushSubscriptions, is PushTested -> "push"
        is ConversationResumed, is RunQueued, is QueueChanged -> "resume and queue"
        is ScheduleSnapshot, is ScheduleCreated, is ScheduleChanged -> "schedule"
        is PairCreated, is DeviceSnapshot, is DeviceRevoked -> "device"
        is ModesSnapshot, is ModeChanged, is CommandsSnapshot -> "modes"
        is ThoughtDelta, is ThoughtComplete -> "thoughts"
        is PlanUpdated, is UsageUpdated -> "activity"
        is ConversationStatus, is ConversationResults -> "inbox"
        is AgentsSnapshot, is AgentsChanged, is WorkspacesSnapshot -> "workspaces"
        is ChangesSnapshot, is ChangesFile, is ChangesChanged -> "changes"
        is ServerMessage.Unknown -> "unknown ${message.type}"
    }

    @Test
    fun `a newer server's agent status decodes to Unknown, and workspaces frames keep every known field`() {
        val changed = decode("agents-changed-unknown-status.json") as AgentsChanged
        assertInstanceOf(AgentStatus.Unknown::class.java, changed.agent.status)
        assertEquals("sleeping", changed.agent.status.value)
        assertEquals("claude", changed.agent.agentId)
        val agents = decode("agents-snapshot-unknown-fields.json") as AgentsSnapshot
        assertEquals(AgentStatus.READY, agents.agents.single().status)
        val workspaces = decode("workspaces-snapshot-unknown-fields.json") as WorkspacesSnapshot
        assertEquals(listOf("claude"), workspaces.workspaces.single().agents)
        val list = decode("conversation-snapshot-workspaces-unknown-fields.json") as ConversationSnapshot
        assertEquals(OptionalNullable.Value("pheby/a1b2c3d4"), list.conversations.single().branch)
    }

    @Test
    fun `a newer server's change status and file type decode to Unknown, the rest of the file kept`() {
        val copied = (decode("changes-snapshot-unknown-status.json") as ChangesSnapshot).files.single()
        assertInstanceOf(ChangeStatus.Unknown::class.java, copied.status)
        assertEquals("copied", copied.status.value)
        assertEquals(ChangedFileType.FILE, copied.type)
        val pointer = (decode("changes-snapshot-unknown-type.json") as ChangesSnapshot).files.single()
        assertInstanceOf(ChangedFileType.Unknown::class.java, pointer.type)
        assertEquals(ChangeStatus.MODIFIED, pointer.status)
        assertEquals("src/footer.ts", pointer.path)
        val changed = decode("changes-changed-unknown-fields.json") as ChangesChanged
        assertEquals(2L, changed.fileCount)
    }

    @Test
    fun `exhaustive when works over messages and string sets`() {
        assertEquals("unknown run.paused", kindOf(decode("unknown-type.json")))
        assertEquals("run", kindOf(decode("run-finished-unknown-status.json")))
        assertEquals("done", describe(RunStatus.of("completed")))
    }

    @Test
    fun `known values are the same singletons, unknown ones compare by value`() {
        assertSame(ReasoningEffort.XHIGH, ReasoningEffort.of("xhigh"))
        assertSame(ReasoningEffort.XHIGH, PhebyJson.decodeFromString(ReasoningEffort.serializer(), "\"xhigh\""))
        assertEquals(ReasoningEffort.of("adaptive"), ReasoningEffort.of("adaptive"))
        assertEquals(ReasoningEffort.of("adaptive").hashCode(), ReasoningEffort.of("adaptive").hashCode())
        assertTrue(ReasoningEffort.of("adaptive") != ToolStatus.of("adaptive") as Any)
        assertEquals(8, ReasoningEffort.entries.size)
        assertEquals("xhigh", ReasoningEffort.XHIGH.toString())
    }

    @Test
    fun `a non-string value, a missing field and a frame without a string type are still errors`() {
        val finished = frame("run-finished-unknown-status.json")
        assertThrows(SerializationException::class.java) {
            decodeServerMessage(JsonObject(finished + ("status" to JsonPrimitive(5))).toString())
        }
        assertThrows(SerializationException::class.java) { decodeServerMessage(JsonObject(finished - "run_id").toString()) }
        assertThrows(SerializationException::class.java) { decodeServerMessage("""{"type":5}""") }
        assertThrows(SerializationException::class.java) { decodeServerMessage("""{"conversation_id":"c"}""") }
        assertThrows(SerializationException::class.java) { decodeServerMessage("[]") }
    }

    @Test
    fun `Unknown cannot stand in for a known type`() {
        assertThrows(IllegalArgumentException::class.java) { ServerMessage.Unknown(buildJsonObject { put("type", "pong") }) }
        assertThrows(IllegalArgumentException::class.java) { ServerMessage.Unknown(buildJsonObject { put("text", "no type") }) }
        val edit = ClientMessage.Unknown(buildJsonObject { put("type", "chat.edit"); put("request_id", "r2") })
        assertEquals("""{"type":"chat.edit","request_id":"r2"}""", edit.toJson())
        assertEquals("r2", edit.requestId)
    }
}
