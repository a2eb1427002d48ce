package dev.pheby.protocol

import kotlinx.serialization.serializer
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import kotlin.reflect.KClass

/**
 * The generated tables (Tables.kt, from `schema/meta.json`) agree with the generated models: every
 * request and reply type names the class whose `type` it is, and every feature is ranked once.
 */
class TablesTest {
    private fun serialName(type: KClass<*>): String = serializer(type.java).descriptor.serialName

    @Test
    fun `every request names its class and its replies' classes, and only presence has no reply`() {
        for ((type, replies) in REQUEST_REPLIES) {
            assertEquals(type, serialName(replies.request))
            for (reply in listOfNotNull(replies.reply, replies.alternative)) {
                assertEquals(reply.type, serialName(reply.messageClass), type)
            }
        }
        assertEquals(ClientMessage.Serializer.types, REQUEST_REPLIES.keys + NO_REPLY_TYPES)
        assertEquals(setOf("presence"), NO_REPLY_TYPES)
    }

    @Test
    fun `the reply rules are the protocol ones, run-accepted broadcast, resolutions and cancels to everyone with the request_id`() {
        val rules = REQUEST_REPLIES.mapValues { it.value.reply.rule }
        assertEquals(ReplyRule.BROADCAST, rules["chat.send"])
        assertEquals(ReplyRule.REQUESTER, REQUEST_REPLIES.getValue("chat.send").alternative?.rule)
        assertEquals(ReplyRule.BROADCAST_ALL, rules["run.cancel"])
        assertEquals(ReplyRule.BROADCAST_ALL, rules["approval.respond"])
        assertEquals(ReplyRule.REQUESTER, rules["yolo.set"])
        assertEquals(ReplyRule.REQUESTER, rules["modes.list"])
        assertEquals(ReplyRule.BROADCAST, rules["mode.set"])
        assertEquals(ReplyRule.REQUESTER, rules["commands.list"])
        assertEquals(ReplyRule.REQUESTER, rules["tool.get"])
        assertEquals(ToolEvent::class, REQUEST_REPLIES.getValue("tool.get").reply.messageClass)
        assertEquals(listOf("requester", "broadcast", "broadcast_all"), ReplyRule.entries.map { it.value })
    }

    @Test
    fun `features, their priority, the hello bound and the extension tables`() {
        assertEquals(FEATURES.toSet(), FEATURE_PRIORITY.toSet())
        assertEquals(FEATURES.size, FEATURE_PRIORITY.size)
        assertEquals(FEATURE_DELTA_APPEND, FEATURE_PRIORITY.first())
        assertEquals(16, HELLO_FEATURES_SENT_MAX)
        assertEquals(64, Limits.HELLO_FEATURES)
        assertEquals(FEATURES, EXTENSIONS.keys.toList())
        val known = ClientMessage.Serializer.types + ServerMessage.Serializer.types
        for ((feature, tables) in EXTENSIONS) {
            assertTrue(known.containsAll(tables.types), feature)
            assertTrue(known.containsAll(tables.fields.keys), feature)
        }
        assertEquals(listOf("offset"), EXTENSIONS.getValue(FEATURE_DELTA_APPEND).fields["message.delta"])
        assertEquals(4401, CloseCodes.UNAUTHORIZED)
    }
}
