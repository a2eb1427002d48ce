package dev.pheby.client

import dev.pheby.protocol.ChangeStatus
import dev.pheby.protocol.ChangedFileType
import dev.pheby.protocol.ChangesChanged
import dev.pheby.protocol.decodeServerMessage
import dev.pheby.protocol.toJson
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.async
import kotlinx.coroutines.flow.take
import kotlinx.coroutines.flow.toList
import kotlinx.serialization.json.jsonPrimitive
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

/**
 * The `changes` extension: each call sends `@pheby/protocol`'s client fixture, the fixtures' replies and
 * events reach the app typed (every status and file type, a rename's old path, a binary file without a
 * patch), the server's refusals arrive as their codes, and `changes.changed` reaches its conversation's
 * flow and moves the `resume` position like a run's frames. A scripted WebSocket peer on 127.0.0.1 plays
 * the server (pheby-server's changes are not on this branch): what is asserted is the client's side.
 */
class ChangesTest : ScriptedTest() {
    @Test
    fun `the changes of a conversation are listed file by file, and a file's diff fetched by its ID`() = blocking {
        val (client, peer) = connected(listOf("delta.append", "resume", "changes"))
        client.use {
            assertTrue(Features.CHANGES in client.features)
            val listed = async { client.listChanges(CONVERSATION) }
            val list = peer.answer("changes.list", fixtureObject("valid/server/changes.snapshot.json"))
            assertSent("valid/client/changes.list.json", list)
            val snapshot = listed.await()
            assertEquals(reply("valid/server/changes.snapshot.json", list), snapshot)
            assertEquals("3f786850e387550fdab836ed7e6dc881de23001b", snapshot.base.commit)
            assertEquals("3f78685", snapshot.base.label)
            assertFalse(snapshot.truncated)
            assertEquals(
                listOf(ChangeStatus.MODIFIED, ChangeStatus.RENAMED, ChangeStatus.ADDED, ChangeStatus.DELETED, ChangeStatus.TYPE_CHANGED, ChangeStatus.MODIFIED),
                snapshot.files.map { it.status },
            )
            assertEquals(ChangedFileType.SYMLINK, snapshot.files[4].type)
            assertEquals(ChangedFileType.SUBMODULE, snapshot.files[5].type)
            assertEquals(listOf(null, "src/footer.css", null, null, null, null), snapshot.files.map { it.oldPath }, "a rename only")
            val renamed = snapshot.files[1]
            assertEquals("src/site-footer.css" to 1L, renamed.path to renamed.additions)

            val first = snapshot.files.first()
            val diffed = async { client.diffChange(CONVERSATION, first.fileId) }
            val diff = peer.answer("changes.diff", fixtureObject("valid/server/changes.file.json"))
            assertSent("valid/client/changes.diff.json", diff)
            val file = diffed.await()
            assertEquals(first.fileId, file.fileId)
            assertEquals(first.path, file.path)
            assertTrue(file.patch!!.startsWith("diff --git a/src/footer.ts b/src/footer.ts\n"))
            assertFalse(file.truncated)

            // A binary file has no patch. On a resume connection this reply carries seq, which the client follows.
            val logo = snapshot.files.single { it.binary }
            val binary = async { client.diffChange(CONVERSATION, logo.fileId) }
            val sent = peer.answer("changes.diff", fixtureObject("valid/server/changes.file.binary.json"))
            assertEquals(logo.fileId, sent.getValue("file_id").jsonPrimitive.content)
            assertNull(binary.await().patch)
            assertEquals(131L, client.position(CONVERSATION))
        }
    }

    @Test
    fun `the server's refusals arrive as their codes - not a git repository, a stale file ID, git too slow`() = blocking {
        val (client, peer) = connected(listOf("delta.append", "resume", "changes"))
        client.use {
            val notGit = async { runCatching { client.listChanges(CONVERSATION) }.exceptionOrNull() as PhebyException }
            peer.refuse("changes.list", "not_implemented", "This conversation's working directory is not in a git repository")
            assertEquals("not_implemented", notGit.await().code)
            assertTrue(notGit.await().message!!.contains("not in a git repository"))

            val stale = async { runCatching { client.diffChange(CONVERSATION, "c-0000000000000000") }.exceptionOrNull() as PhebyException }
            peer.refuse("changes.diff", "not_found", "No such changed file")
            assertEquals("not_found", stale.await().code)

            val slow = async { runCatching { client.listChanges(CONVERSATION) }.exceptionOrNull() as PhebyException }
            peer.refuse("changes.list", "internal_error", "git did not answer in time")
            assertEquals("internal_error", slow.await().code)
            assertEquals("git did not answer in time", slow.await().message)
        }
    }

    @Test
    fun `changes_changed reaches its conversation's flow, and its seq is where a resume continues`() = blocking {
        val (client, peer) = connected(listOf("delta.append", "resume", "changes"))
        client.use {
            val mine = async(start = CoroutineStart.UNDISPATCHED) { client.changeUpdates(CONVERSATION).take(2).toList() }
            val every = async(start = CoroutineStart.UNDISPATCHED) { client.changeUpdates().take(3).toList() }
            val fixture = decodeServerMessage(fixture("valid/server/changes.changed.json")) as ChangesChanged
            val other = fixture.copy(conversationId = "f".repeat(32))
            peer.send(other.toJson())
            peer.send(fixture("valid/server/changes.changed.json"))
            peer.send(fixture("valid/server/changes.changed.resume.json"))
            val (totals, cleaned) = mine.await()
            assertEquals(fixture, totals)
            assertEquals(6L to (15L to 50L), totals.fileCount to (totals.additions to totals.deletions))
            assertNull(totals.requestId, "an event nobody asked for")
            assertEquals(0L, cleaned.fileCount, "the changes were undone (committed or reverted)")
            assertEquals(listOf(other, totals, cleaned), every.await())
            assertEquals(131L, client.position(CONVERSATION), "resumed from here after a drop: the replay brings the later ones")
            assertNull(client.position(other.conversationId), "that one carried no seq")
        }
    }

    @Test
    fun `a server without changes answers its requests unknown_type`() = blocking {
        val (client, peer) = connected(listOf("delta.append"))
        client.use {
            assertFalse(Features.CHANGES in client.features, "asked for, not enabled")
            val listed = async { runCatching { client.listChanges(CONVERSATION) }.exceptionOrNull() }
            peer.refuse("changes.list", "unknown_type", "Unknown message type: changes.list")
            assertEquals("unknown_type", (listed.await() as PhebyException).code)
        }
    }
}
