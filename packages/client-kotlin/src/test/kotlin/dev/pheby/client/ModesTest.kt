package dev.pheby.client

import dev.pheby.protocol.OptionalNullable
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.async
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.AfterAll
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNotEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

/**
 * The `modes` extension against the real server's simulator: its modes listed and chosen, the choice
 * broadcast to every other `modes` client and kept in history, its commands (the `/sim` scenarios)
 * listed and run as ordinary messages, refusals as typed errors, and a connection without the feature.
 */
class ModesTest : ServerTest() {
    /** A second `modes` client (asked for by default), watching the broadcasts. */
    private val watcher = runBlocking { server.client() }

    /** A client that left `modes` out of its features. */
    private val plain = runBlocking { server.client { copy(features = features - Features.MODES) } }

    @AfterAll
    fun closeClients() {
        watcher.close()
        plain.close()
    }

    @Test
    fun `the simulator's modes are listed and chosen, every other modes client sees the change, the turn runs in it`() = blocking {
        assertTrue(Features.MODES in client.features, "asked for by default")
        val id = newConversation("Modes")
        // The agent's session opens with the first turn; its modes are known from then on.
        checkRun(client.chat(id, "hello").toList())
        val snapshot = client.listModes(id)
        assertEquals(id, snapshot.conversationId)
        assertEquals(listOf("default", "plan", "auto-edit", "yolo"), snapshot.modes.map { it.modeId })
        assertEquals(listOf(false, false, true, true), snapshot.modes.map { it.autoApproves }, "auto-edit and yolo approve without asking")
        assertEquals("default", snapshot.currentModeId)
        val other = snapshot.modes.first { it.modeId == "plan" }

        val seen = async(start = CoroutineStart.UNDISPATCHED) { watcher.modeChanges(id).first() }
        val changed = client.setMode(id, other.modeId)
        assertEquals(other.modeId, changed.modeId)
        assertEquals(id, changed.conversationId)
        assertTrue(changed.requestId != null, "the reply carries the request_id")
        val broadcast = seen.await()
        assertEquals(other.modeId, broadcast.modeId)
        assertNull(broadcast.requestId, "the others' copy carries none")

        assertEquals(other.modeId, client.listModes(id).currentModeId)
        assertEquals(OptionalNullable.Value(other.modeId), client.openConversation(id).modeId)
        assertEquals("This turn runs in the plan mode (Plan).", checkRun(client.chat(id, "/sim mode").toList()))
        assertEquals(other.modeId, client.listModes(id).currentModeId, "the conversation's choice stays")

        // The agent leaves plan mode by itself (as after an accepted plan): everyone gets mode.changed without request_id.
        val left = async(start = CoroutineStart.UNDISPATCHED) { client.modeChanges(id).first() }
        val leftSeen = async(start = CoroutineStart.UNDISPATCHED) { watcher.modeChanges(id).first() }
        assertEquals(
            "I left the plan mode by myself: this conversation is in the default mode now.",
            checkRun(client.chat(id, "/sim mode leave").toList()),
        )
        for (changed in listOf(left.await(), leftSeen.await())) {
            assertEquals("default", changed.modeId)
            assertNull(changed.requestId)
        }
        assertEquals("default", client.listModes(id).currentModeId)
        assertEquals("This turn runs in the default mode (Default).", checkRun(client.chat(id, "/sim mode").toList()))
    }

    @Test
    fun `the simulator's commands are listed, and one runs as an ordinary message`() = blocking {
        val id = newConversation("Commands")
        // The agent says its commands as its session opens (with the first turn); listing never starts one.
        checkRun(client.chat(id, "hello").toList())
        val commands = client.listCommands(id)
        assertEquals(id, commands.conversationId)
        assertEquals(commands, watcher.listCommands(id).copy(requestId = commands.requestId), "the same list for every client")
        val long = commands.commands.first { it.name == "sim long" }
        assertEquals("N (1..1000000)", long.hint)
        assertEquals(null, commands.commands.first { it.name == "sim tools" }.hint)
        assertTrue(commands.commands.all { !it.name.startsWith("/") }, "names without the slash")
        // A command runs as an ordinary message: "/sim long 42".
        assertEquals(42, checkRun(client.chat(id, slashCommand(long.name, "42")).toList()).length)
    }

    @Test
    fun `refusals are typed, and a connection without modes gets unknown_type and no mode in history`() = blocking {
        val id = newConversation("Refused modes")
        expectPheby("bad_request") { client.setMode(id, "no-such-mode") }
        expectPheby("conversation_not_found") { client.listModes(UNKNOWN_ID) }
        expectPheby("conversation_not_found") { client.setMode(UNKNOWN_ID, "plan") }
        expectPheby("conversation_not_found") { client.listCommands(UNKNOWN_ID) }

        assertFalse(Features.MODES in plain.features)
        expectPheby("unknown_type") { plain.listModes(id) }
        expectPheby("unknown_type") { plain.setMode(id, "plan") }
        expectPheby("unknown_type") { plain.listCommands(id) }
        assertEquals(OptionalNullable.Absent, plain.openConversation(id).modeId, "v1: no mode_id field")
        assertNotEquals(OptionalNullable.Absent, client.openConversation(id).modeId, "a modes client gets the field")
        plain.ping()
    }
}
