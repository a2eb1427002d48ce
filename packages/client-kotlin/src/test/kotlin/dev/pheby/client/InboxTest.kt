package dev.pheby.client

import dev.pheby.protocol.ApprovalChoice
import dev.pheby.protocol.ApprovalRequest
import dev.pheby.protocol.ConversationStatus
import dev.pheby.protocol.ConversationStatusValue
import dev.pheby.protocol.MessageRole
import dev.pheby.protocol.OptionalNullable
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.async
import kotlinx.coroutines.flow.first
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

/**
 * The `inbox` extension against the real server's simulator: a conversation's status through an
 * approval (`/sim approval`: running, waiting with one pending, idle with the answer unread), read back
 * to zero, archived out of the list and back, found by search, and a client without the feature that
 * gets none of it.
 */
class InboxTest : ServerTest() {
    /** A second `inbox` client of the same reader (the master secret), watching the events. */
    private val watcher = runBlocking { server.client() }

    /** A client that left `inbox` out of its features. */
    private val plain = runBlocking { server.client { copy(features = features - Features.INBOX) } }

    @AfterAll
    fun closeClients() {
        watcher.close()
        plain.close()
    }

    @Test
    fun `a run through an approval is running, waiting with one pending, then idle with its answer unread, until it is read`() = blocking {
        assertTrue(Features.INBOX in client.features, "asked for by default")
        val id = newConversation("Inbox status")
        val fresh = client.listConversations().conversations.single { it.conversationId == id }
        assertEquals(ConversationStatusValue.IDLE, fresh.status)
        assertEquals(0L, fresh.pending)
        assertEquals(0L, fresh.unread)
        assertEquals(OptionalNullable.Value(null), fresh.preview, "no message yet")
        assertEquals(false, fresh.archived)

        // Every status change until the run is idle again (the first one is the run's start).
        val statuses = async(start = CoroutineStart.UNDISPATCHED) {
            watcher.statusChanges(id).transformWhile { emit(it); it.status != ConversationStatusValue.IDLE }.toList()
        }
        val waiting = async(start = CoroutineStart.UNDISPATCHED) { client.statusChanges(id).first { it.status == ConversationStatusValue.WAITING } }
        val frames = client.chat(id, "/sim approval").onEach { m ->
            if (m is ApprovalRequest) {
                assertEquals(1L, waiting.await().pending, "the question waits")
                val listed = client.listConversations().conversations.single { it.conversationId == id }
                assertEquals(ConversationStatusValue.WAITING, listed.status)
                assertEquals(1L, listed.pending)
                client.respondToApproval(m.approvalId, ApprovalChoice.ONCE)
            }
        }.toList()
        val answer = checkRun(frames)
        val seen = statuses.await()
        assertEquals(ConversationStatusValue.RUNNING, seen.first().status, "the run started")
        assertTrue(seen.any { it.status == ConversationStatusValue.WAITING && it.pending == 1L })
        for (status in seen) {
            assertNull(status.requestId, "nobody asked")
            assertEquals(id, status.conversationId)
        }
        val idle = seen.last()
        assertEquals(0L, idle.pending)
        assertEquals(1L, idle.unread, "the answer is unread")
        assertEquals(MessageRole.ASSISTANT, idle.preview?.role)
        assertEquals(answer, idle.preview?.text, "the answer, shorter than 200 characters")

        val listed = client.listConversations().conversations.single { it.conversationId == id }
        assertEquals(ConversationStatusValue.IDLE, listed.status)
        assertEquals(1L, listed.unread)
        assertEquals(OptionalNullable.Value(idle.preview!!), listed.preview)
        val bare = listed.copy(status = null, pending = null, unread = null, preview = OptionalNullable.Absent, archived = null)
        assertEquals(listed, bare.withStatus(idle), "the event makes the listed row")
        assertEquals(bare, bare.withStatus(idle.copy(conversationId = "0".repeat(32))), "another conversation's changes nothing")

        // Read: the reply carries the request_id; the same reader's other connection gets it without.
        val readSeen = async(start = CoroutineStart.UNDISPATCHED) { watcher.statusChanges(id).first() }
        val read = client.markRead(id)
        assertTrue(read.requestId != null)
        assertEquals(0L, read.unread)
        assertEquals(ConversationStatusValue.IDLE, read.status)
        val other = readSeen.await()
        assertNull(other.requestId)
        assertEquals(0L, other.unread)
        assertEquals(0L, client.listConversations().conversations.single { it.conversationId == id }.unread)

        expectPheby("bad_request") { client.markRead(id, "m999999") }
        expectPheby("conversation_not_found") { client.markRead("0".repeat(32)) }
    }

    @Test
    fun `an archived conversation is listed only with archived true, for every inbox client, until it is brought back`() = blocking {
        val id = newConversation("Inbox archive")
        checkRun(client.chat(id, "hello").toList())
        val seen = async(start = CoroutineStart.UNDISPATCHED) { watcher.statusChanges(id).first() }
        val archived = client.archive(id, true)
        assertTrue(archived.archived)
        assertTrue(archived.requestId != null)
        val broadcast = seen.await()
        assertTrue(broadcast.archived)
        assertNull(broadcast.requestId, "the others' copy carries none")

        assertFalse(client.listConversations().conversations.any { it.conversationId == id }, "left out of the list")
        val onlyArchived = client.listConversations(archived = true).conversations
        assertTrue(onlyArchived.any { it.conversationId == id })
        assertTrue(onlyArchived.all { it.archived == true }, "archived ones only")
        assertTrue(client.archive(id, true).archived, "archiving again is answered the same way")

        // A new message does not bring it back; its answer is unread.
        checkRun(client.chat(id, "still here").toList())
        val still = client.listConversations(archived = true).conversations.single { it.conversationId == id }
        assertEquals(true, still.archived)
        assertEquals(2L, still.unread)

        val back: ConversationStatus = client.archive(id, false)
        assertFalse(back.archived)
        assertTrue(client.listConversations().conversations.any { it.conversationId == id })
        assertFalse(client.listConversations(archived = true).conversations.any { it.conversationId == id })
    }

    @Test
    fun `search finds a message of any conversation, archived ones too, newest first, at most limit`() = blocking {
        val word = "kotlinzebra" + System.nanoTime()
        val first = newConversation("Inbox search one")
        checkRun(client.chat(first, "Where is the $word now?").toList())
        val second = newConversation("Inbox search two")
        checkRun(client.chat(second, "The $word left.").toList())
        client.archive(second, true)

        val found = client.search(word)
        assertEquals(word, found.query)
        assertTrue(found.requestId != null)
        assertEquals(listOf(second, first), found.results.map { it.conversationId }.distinct(), "newest first, the archived one too")
        for (result in found.results) {
            assertTrue(result.messageId.matches(Regex("m\\d+")), result.messageId)
            assertTrue(result.snippet.length <= 200)
        }
        val history = client.openConversation(first)
        val hit = found.results.first { it.conversationId == first }
        assertTrue(history.messages.single { it.messageId == hit.messageId }.text.contains(word), "the result names the message")

        assertEquals(1, client.search(word, limit = 1).results.size)
        assertTrue(client.search(word, limit = 50).results.size <= 50)
        expectPheby("bad_request") { client.search(word, limit = 51) }
        expectPheby("bad_request") { client.search("x".repeat(201)) }
        assertEquals(emptyList<Any>(), client.search("\"unbalanced${System.nanoTime()}").results, "an FTS5 syntax error is searched as words")
    }

    @Test
    fun `a client without inbox lists every conversation without the inbox fields and gets unknown_type for its requests`() = blocking {
        assertFalse(Features.INBOX in plain.features)
        val id = newConversation("Inbox v1")
        client.archive(id, true)
        val entry = plain.listConversations(archived = true).conversations.single { it.conversationId == id }
        assertNull(entry.status)
        assertNull(entry.unread)
        assertNull(entry.archived)
        assertEquals(OptionalNullable.Absent, entry.preview)
        assertTrue(plain.listConversations().conversations.any { it.conversationId == id }, "v1 lists every conversation, archived or not")
        expectPheby("unknown_type") { plain.markRead(id) }
        expectPheby("unknown_type") { plain.archive(id, false) }
        expectPheby("unknown_type") { plain.search("hello") }
        client.archive(id, false)
    }
}
