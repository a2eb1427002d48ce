package dev.pheby.protocol

import kotlinx.serialization.KSerializer
import kotlinx.serialization.SerializationException
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.DynamicTest
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestFactory
import java.io.File

/**
 * Proves the generated models agree with the TypeScript side on every fixture of
 * `packages/protocol/fixtures`, read in place (the path comes from the `pheby.fixtures` property).
 */
class FixtureRoundTripTest {
    private val fixtures = File(System.getProperty("pheby.fixtures") ?: "../protocol/fixtures")

    private fun files(dir: String): List<File> {
        val files = File(fixtures, dir).listFiles { f -> f.name.endsWith(".json") }?.sortedBy { it.name }
        assertTrue(!files.isNullOrEmpty(), "no fixtures in ${File(fixtures, dir)}")
        return files!!
    }

    private fun parse(file: File): JsonElement = PhebyJson.parseToJsonElement(file.readText())

    /**
     * The fixtures' deliberate unknown fields are named `x_*` (e.g. `chat.send.unknown-field.json`'s
     * `x_future_field`). Models drop unknown keys on decode, so the expected re-encoding is the fixture
     * without them. Nothing else is removed: a property the models lost would still fail the comparison.
     */
    private fun withoutUnknownFields(element: JsonElement): JsonElement = when (element) {
        is JsonObject -> JsonObject(element.filterKeys { !it.startsWith("x_") }.mapValues { withoutUnknownFields(it.value) })
        is JsonArray -> JsonArray(element.map(::withoutUnknownFields))
        else -> element
    }

    private fun <T : Any> roundTrip(file: File, serializer: KSerializer<T>): T {
        val fixture = parse(file)
        val decoded = PhebyJson.decodeFromJsonElement(serializer, fixture)
        // Decode from the raw text too: the streaming decoder is what apps use.
        assertEquals(decoded, PhebyJson.decodeFromString(serializer, file.readText()))
        val reencoded = PhebyJson.encodeToJsonElement(serializer, decoded)
        assertEquals(withoutUnknownFields(fixture), reencoded, "re-encoded ${file.name}")
        return decoded
    }

    /** The serial name (`type`) of the class a message decoded into. */
    private fun serialNameOf(serializer: KSerializer<*>, value: Any): String {
        @Suppress("UNCHECKED_CAST")
        val encoded = PhebyJson.encodeToJsonElement(serializer as KSerializer<Any>, value)
        return encoded.jsonObject.getValue("type").jsonPrimitive.content
    }

    private fun messageCases(dir: String, serializer: KSerializer<*>, decodedTypes: MutableSet<String>) =
        files(dir).map { file ->
            DynamicTest.dynamicTest("$dir/${file.name}") {
                @Suppress("UNCHECKED_CAST")
                val decoded = roundTrip(file, serializer as KSerializer<Any>)
                val type = parse(file).jsonObject.getValue("type").jsonPrimitive.content
                // The concrete class is the one whose @SerialName is the fixture's type.
                val classSerialName = decoded::class.java.getAnnotation(kotlinx.serialization.SerialName::class.java)?.value
                assertEquals(type, classSerialName, "${file.name} decoded into ${decoded::class.simpleName}")
                assertEquals(type, serialNameOf(serializer, decoded))
                decodedTypes += type
            }
        }

    /** Every member of a sealed hierarchy, by serial name, from its serializer's descriptor. */
    private fun memberTypes(serializer: KSerializer<*>): Set<String> =
        serializer.descriptor.getElementDescriptor(1).let { d -> (0 until d.elementsCount).map(d::getElementName).toSet() }

    private val clientTypes = mutableSetOf<String>()
    private val serverTypes = mutableSetOf<String>()

    @TestFactory
    fun `every valid client fixture decodes into its ClientMessage class and round-trips`() =
        messageCases("valid/client", ClientMessage.serializer(), clientTypes) +
            DynamicTest.dynamicTest("all 41 client message types (18 of v1, 23 of extensions) are covered") {
                assertEquals(41, memberTypes(ClientMessage.serializer()).size)
                assertEquals(memberTypes(ClientMessage.serializer()), clientTypes)
            }

    @TestFactory
    fun `every valid server fixture decodes into its ServerMessage class and round-trips`() =
        messageCases("valid/server", ServerMessage.serializer(), serverTypes) +
            DynamicTest.dynamicTest("all 55 server message types (27 of v1, 28 of extensions) are covered") {
                assertEquals(55, memberTypes(ServerMessage.serializer()).size)
                assertEquals(memberTypes(ServerMessage.serializer()), serverTypes)
            }

    private val httpBodies: Map<String, KSerializer<*>> = mapOf(
        "AttachmentDescriptor" to AttachmentDescriptor.serializer(),
        "ErrorBody" to ErrorBody.serializer(),
        "UploadResponse" to UploadResponse.serializer(),
        "ApprovalAnswer" to ApprovalAnswer.serializer(),
        "ApprovalAnswerResponse" to ApprovalAnswerResponse.serializer(),
        "ClarifyAnswer" to ClarifyAnswer.serializer(),
        "ClarifyAnswerResponse" to ClarifyAnswerResponse.serializer(),
        "PushPayload" to PushPayload.serializer(),
    )

    @TestFactory
    fun `every valid http fixture round-trips through the class its file name names`() = files("valid/http").map { file ->
        DynamicTest.dynamicTest("valid/http/${file.name}") {
            val serializer = httpBodies[file.name.substringBefore('.')]
            assertTrue(serializer != null, "no model for ${file.name}; add it to httpBodies")
            @Suppress("UNCHECKED_CAST")
            roundTrip(file, serializer as KSerializer<Any>)
        }
    }

    /**
     * Invalid fixtures the models accept on purpose, by direction. Value constraints (lengths, blank text,
     * uniqueness, ranges, patterns) are not types in Kotlin, and the models are tolerant readers: a `type`
     * or string-set value they do not know decodes to an `Unknown` case (forward compatibility; the
     * server still rejects such client frames, and a v1 server never sends such server frames).
     * A client fixture with `needs_feature` is valid with that feature (the models know every extension;
     * which ones a connection enabled is the server's to enforce), so it is accepted too.
     * The sets are exact: a fixture listed here that starts failing to decode fails this test too.
     */
    private val acceptedClient = mapOf(
        "approval-respond-bad-choice.json" to "unknown ApprovalChoice",
        "chat-send-11-attachments.json" to "maxItems 10",
        "chat-send-bad-attachment-id.json" to "pattern ^[0-9a-f]{32}$",
        "chat-send-blank.json" to "non-blank (pattern \\S)",
        "chat-send-duplicate-attachments.json" to "uniqueItems",
        "chat-send-too-long.json" to "maxLength 64000",
        "hello-65-features.json" to "maxItems 64",
        "hello-feature-name-too-long.json" to "maxLength 64",
        "open-limit-negative.json" to "minimum 1",
        "open-limit-zero.json" to "minimum 1",
        "reasoning-set-bad-effort.json" to "unknown ReasoningEffort",
        "rename-blank.json" to "non-blank (pattern \\S)",
        "server-type-from-client.json" to "unknown type (ready is a server type)",
        "unknown-type.json" to "unknown type",
        "hello-pairing-code-21.json" to "pattern (22..128 characters)",
        "hello-pairing-code-bad-characters.json" to "pattern (URL-safe base64)",
        "hello-device-name-blank.json" to "non-blank (pattern \\S)",
        "pair-create-name-201.json" to "maxLength 200",
        "chat-send-client-message-id-65.json" to "maxLength 64",
        "conversation-create-client-message-id-blank.json" to "non-blank (pattern \\S)",
        "open-since-seq-negative.json" to "minimum 0",
        "push-subscribe-bad-event.json" to "unknown PushEventKind",
        "push-subscribe-no-events.json" to "minItems 1",
        "push-subscribe-duplicate-events.json" to "uniqueItems",
        "push-subscribe-endpoint-not-url.json" to "format uri",
        "push-subscribe-bad-p256dh.json" to "pattern (65 bytes of base64url)",
        "presence-bad-state.json" to "unknown PresenceState",
        "schedule-create-cron-four-fields.json" to "pattern (five fields)",
        "schedule-create-at-without-offset.json" to "format date-time",
        "schedule-create-bad-timezone.json" to "pattern (IANA name characters)",
        "schedule-create-blank-prompt.json" to "non-blank (pattern \\S)",
        "schedule-create-prompt-too-long.json" to "maxLength 64000",
        "mode-set-empty-mode-id.json" to "minLength 1",
        "conversation-read-empty-message-id.json" to "minLength 1",
        "conversation-search-blank.json" to "non-blank (pattern \\S)",
        "conversation-search-query-201.json" to "maxLength 200",
        "conversation-search-limit-0.json" to "minimum 1",
        "conversation-search-limit-51.json" to "maximum 50",
        "conversation-create-agent-id-uppercase.json" to "pattern ^[a-z0-9-]{1,32}$",
        "conversation-create-workspace-id-33.json" to "pattern ^[a-z0-9-]{1,32}$",
        "conversation-create-workspace-id-empty.json" to "pattern ^[a-z0-9-]{1,32}$",
        "model-set-agent-id-slash.json" to "pattern ^[a-z0-9-]{1,32}$",
        "changes-diff-file-id-65.json" to "maxLength 64",
        "changes-diff-empty-file-id.json" to "minLength 1",
    )
    private val acceptedServer = mapOf(
        "attachment-added-bad-kind.json" to "unknown AttachmentKind",
        "error-unknown-code.json" to "unknown ErrorCode",
        "message-delta-negative-offset.json" to "minimum 0 (applyTo refuses it)",
        "run-finished-bad-status.json" to "unknown RunStatus",
        "tool-event-bad-status.json" to "unknown ToolStatus",
        "unknown-server-type.json" to "unknown type",
        "run-queued-position-0.json" to "minimum 1",
        "run-queued-position-21.json" to "maximum 20",
        "queue-changed-21-queued.json" to "maxItems 20",
        "message-delta-negative-seq.json" to "minimum 0",
        "ready-bad-vapid-key.json" to "pattern (87 base64url characters)",
        "ready-device-short-secret.json" to "pattern (43..256 characters)",
        "push-subscriptions-bad-event.json" to "unknown PushEventKind",
        "schedule-snapshot-bad-status.json" to "unknown RunStatus",
        "pair-created-bad-uri.json" to "pattern (pheby://pair?)",
        "approval-request-expires-at-not-timestamp.json" to "format date-time",
        "commands-snapshot-blank-name.json" to "non-blank (pattern \\S)",
        "thought-delta-negative-offset.json" to "minimum 0 (applyTo refuses it)",
        "approval-request-preview-21-blocks.json" to "maxItems 20",
        "plan-updated-101-entries.json" to "maxItems 100",
        "plan-updated-entry-2001.json" to "maxLength 2000",
        "tool-event-21-blocks.json" to "maxItems 20",
        "tool-event-51-locations.json" to "maxItems 50",
        "tool-event-text-16001.json" to "maxLength 16000",
        "tool-event-title-501.json" to "maxLength 500",
        "usage-updated-negative-used.json" to "minimum 0",
        "conversation-status-negative-pending.json" to "minimum 0",
        "conversation-status-preview-201.json" to "maxLength 200",
        "conversation-results-51.json" to "maxItems 50",
        "conversation-results-snippet-201.json" to "maxLength 200",
        "agents-snapshot-65.json" to "maxItems 64",
        "agents-changed-name-201.json" to "maxLength 200",
        "changes-snapshot-1001-files.json" to "maxItems 1000",
        "changes-snapshot-short-commit.json" to "pattern (a full commit hash)",
        "changes-snapshot-negative-additions.json" to "minimum 0",
        "changes-file-id-65.json" to "maxLength 64",
    )
    private val acceptedHttp = mapOf(
        "ApprovalAnswer.bad-choice.json" to "unknown ApprovalChoice",
        "ClarifyAnswer.blank.json" to "non-blank (pattern \\S)",
        "PushPayload.unknown-kind.json" to "unknown kind (PushPayload.Unknown)",
        "PushPayload.tag-33.json" to "pattern (at most 32 characters)",
        "PushPayload.approval-no-choices.json" to "minItems 1",
        "PushPayload.message-negative-unread.json" to "minimum 0",
    )

    private fun invalidCases(dir: String, serializer: (File) -> KSerializer<*>, accepted: Map<String, String>, key: String = "frame") = files(dir).map { file ->
        DynamicTest.dynamicTest("$dir/${file.name}") {
            val fixture = parse(file).jsonObject
            val serializer = serializer(file)
            val text = fixture["raw"]?.jsonPrimitive?.content ?: fixture.getValue(key).toString()
            val reason = accepted[file.name] ?: fixture["needs_feature"]?.jsonPrimitive?.content?.let { "valid with the $it feature" }
            if (fixture.containsKey("server_only")) assertTrue(accepted[file.name] != null, "${file.name} is server_only but not listed")
            if (reason != null) {
                // Decodes ($reason is only the server's to enforce) and loses nothing on the way back.
                @Suppress("UNCHECKED_CAST")
                val decoded = PhebyJson.decodeFromString(serializer as KSerializer<Any>, text)
                assertEquals(fixture.getValue(key), PhebyJson.encodeToJsonElement(serializer, decoded), file.name)
            } else {
                // SerializationException for structure; IllegalArgumentException from a constant check in init.
                assertThrows(IllegalArgumentException::class.java, { PhebyJson.decodeFromString(serializer, text) }, file.name)
            }
        }
    }

    @TestFactory
    fun `invalid client fixtures fail to decode unless the models accept them on purpose`() =
        invalidCases("invalid/client", { ClientMessage.serializer() }, acceptedClient)

    @TestFactory
    fun `invalid server fixtures fail to decode unless they only carry an unknown type or value`() =
        invalidCases("invalid/server", { ServerMessage.serializer() }, acceptedServer)

    @TestFactory
    fun `invalid http fixtures fail to decode unless the models accept them on purpose`() =
        invalidCases("invalid/http", { httpBodies.getValue(it.name.substringBefore('.')) }, acceptedHttp, key = "body")

    @Test
    fun `a push payload of an unknown kind keeps what every payload has`() {
        val text = """{"v":1,"kind":"reminder","tag":"t1","ts":"2026-09-02T18:00:00+00:00","title":"Later","x":{"y":1.5e3}}"""
        val payload = decodePushPayload(text)
        assertTrue(payload is PushPayload.Unknown)
        payload as PushPayload.Unknown
        assertEquals("reminder", payload.kind)
        assertEquals("t1", payload.tag)
        assertEquals("Later", payload.title)
        assertEquals(null, payload.body)
        assertEquals(text, PhebyJson.encodeToString(PushPayload.serializer(), payload))
        val known = decodePushPayload("""{"v":1,"kind":"test","tag":"test","ts":"t","subscription_id":"ps_1"}""")
        assertEquals("test", (known as PushTestPayload).tag)
    }

    @Test
    fun `cross-field rules are checked on construction`() {
        assertThrows(IllegalArgumentException::class.java) { Hello(protocolVersion = 1) }
        assertThrows(IllegalArgumentException::class.java) { Hello(secret = "s", pairingCode = "c".repeat(22), protocolVersion = 1) }
        assertEquals("c".repeat(22), Hello(pairingCode = "c".repeat(22), protocolVersion = 1).pairingCode)
        assertThrows(IllegalArgumentException::class.java) { ScheduleUpdate(scheduleId = "s") }
        // An explicit null is a change (it removes the name), so it satisfies "at least one field".
        val clear = ScheduleUpdate(scheduleId = "s", name = OptionalNullable.Value(null))
        assertTrue(ClientMessage.serializer().let { PhebyJson.encodeToString(it, clear) }.contains("\"name\":null"))
        assertThrows(IllegalArgumentException::class.java) { ConversationOpen(conversationId = "c", beforeMessageId = "m1", sinceSeq = 3) }
    }

    @Test
    fun `absent and null stay distinct for optional-nullable and required-nullable fields`() {
        val running = decodeServerMessage("""{"type":"tool.event","conversation_id":"c","tool_call_id":"t","tool_name":"x","status":"running","ts":"2026-09-02T18:00:00+00:00"}""")
        val unknown = decodeServerMessage("""{"type":"tool.event","conversation_id":"c","tool_call_id":"t","tool_name":"x","status":"failed","duration_ms":null,"ts":"2026-09-02T18:00:00+00:00"}""")
        assertEquals(OptionalNullable.Absent, (running as ToolEvent).durationMs)
        assertEquals(OptionalNullable.Value(null), (unknown as ToolEvent).durationMs)
        assertFalse(running.toJson().contains("duration_ms"))
        assertTrue(unknown.toJson().contains("\"duration_ms\":null"))
        // A required-nullable field is encoded as null, and missing it is a decode error.
        val pending = ApprovalRequest(approvalId = "a", sessionKey = "s", conversationId = "c", runId = null, command = "rm", description = "d", choices = listOf(ApprovalChoice.DENY), ts = "t")
        assertTrue(pending.toJson().contains("\"run_id\":null"))
        assertThrows(SerializationException::class.java) {
            decodeServerMessage(pending.toJson().replace("\"run_id\":null,", ""))
        }
    }

    @Test
    fun `encoding through the sealed type carries the type discriminator`() {
        val json = PhebyJson.parseToJsonElement(ChatSend(conversationId = "c", text = "hi").toJson()).jsonObject
        assertEquals("chat.send", json.getValue("type").jsonPrimitive.content)
        assertEquals(setOf("type", "conversation_id", "text"), json.keys)
    }

    @Test
    fun `quoted booleans and integers are rejected, unquoted ones accepted`() {
        val open = """{"type":"conversation.open","conversation_id":"c","limit":%s}"""
        assertEquals(5L, (decodeClientMessage(open.format("5")) as ConversationOpen).limit)
        assertThrows(SerializationException::class.java) { decodeClientMessage(open.format("\"5\"")) }
        val tool = """{"type":"tool.event","conversation_id":"c","tool_call_id":"t","tool_name":"x","status":"failed","duration_ms":%s,"ts":"t"}"""
        assertEquals(OptionalNullable.Value(5L), (decodeServerMessage(tool.format("5")) as ToolEvent).durationMs)
        assertThrows(SerializationException::class.java) { decodeServerMessage(tool.format("\"5\"")) }
        val yolo = """{"type":"yolo.set","conversation_id":"c","enabled":%s}"""
        assertEquals(true, (decodeClientMessage(yolo.format("true")) as YoloSet).enabled)
        assertThrows(SerializationException::class.java) { decodeClientMessage(yolo.format("\"true\"")) }
    }
}
