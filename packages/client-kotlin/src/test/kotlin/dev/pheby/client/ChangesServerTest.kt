package dev.pheby.client

import dev.pheby.protocol.ChangeStatus
import dev.pheby.protocol.ChangedFileType
import dev.pheby.protocol.RunAccepted
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.async
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.AfterAll
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Assumptions.assumeTrue
import org.junit.jupiter.api.BeforeEach
import org.junit.jupiter.api.Test
import kotlin.time.Duration.Companion.milliseconds

/**
 * The `changes` extension against the real server's simulator: `/sim changes` edits the simulator's own
 * git repository (modifies `src/app.ts` +2 −1, creates `src/feature.ts` +3, deletes `docs/old-notes.md`
 * −1), the run's end sends `changes.changed` with the totals, and the list and the diffs show the three
 * files. Skipped while the built server does not enable `changes` (ChangesTest covers the client's side
 * against a scripted server either way).
 */
class ChangesServerTest : ServerTest() {
    /** A client that left `changes` out of its features. */
    private val plain = runBlocking { server.client { copy(features = features - Features.CHANGES) } }

    @AfterAll
    fun closePlain() = plain.close()

    @BeforeEach
    fun served() = assumeTrue(Features.CHANGES in client.features, "the built pheby-server does not implement changes")

    @Test
    fun `a run that edits files sends changes_changed, and the list and the diffs show what it did`() = blocking {
        val id = newConversation("Changes")
        val updates = async(start = CoroutineStart.UNDISPATCHED) { client.changeUpdates(id).first() }
        val frames = client.chat(id, "/sim changes").toList()
        checkRun(frames)
        val changed = updates.await()
        assertEquals((frames.first() as RunAccepted).runId, changed.runId, "the run that changed them")
        assertEquals(3L, changed.fileCount)
        assertEquals(5L to 2L, changed.additions to changed.deletions)
        assertNull(changed.requestId)
        assertTrue(changed.seq != null, "resume: replayed after a drop")
        assertTrue(client.position(id)!! >= changed.seq!!)

        val snapshot = client.listChanges(id)
        assertEquals(id, snapshot.conversationId)
        assertTrue(snapshot.base.commit.matches(Regex("[0-9a-f]{40}|[0-9a-f]{64}")), snapshot.base.commit)
        assertTrue(snapshot.base.commit.startsWith(snapshot.base.label), snapshot.base.label)
        assertFalse(snapshot.truncated)
        val files = snapshot.files.associateBy { it.path }
        assertEquals(setOf("src/app.ts", "src/feature.ts", "docs/old-notes.md"), files.keys, "relative to the repository's root")
        val app = files.getValue("src/app.ts")
        assertEquals(ChangeStatus.MODIFIED, app.status)
        assertEquals(2L to 1L, app.additions to app.deletions)
        val feature = files.getValue("src/feature.ts")
        assertEquals(ChangeStatus.ADDED, feature.status, "untracked files are listed")
        assertEquals(3L to 0L, feature.additions to feature.deletions)
        val notes = files.getValue("docs/old-notes.md")
        assertEquals(ChangeStatus.DELETED, notes.status)
        assertEquals(0L to 1L, notes.additions to notes.deletions)
        for (file in snapshot.files) {
            assertEquals(ChangedFileType.FILE, file.type)
            assertFalse(file.binary)
            assertNull(file.oldPath, "no rename")
        }

        val diff = client.diffChange(id, app.fileId)
        assertEquals(app.fileId to "src/app.ts", diff.fileId to diff.path)
        val patch = diff.patch!!
        assertTrue(patch.lines().contains("+export const version = 2;"), patch)
        assertTrue(patch.lines().contains("-  return name;"), patch)
        assertFalse(diff.truncated)
        assertTrue(client.diffChange(id, feature.fileId).patch!!.contains("+export function feature() {"))

        expectPheby("not_found") { client.diffChange(id, "c-" + "0".repeat(16)) }
        expectPheby("conversation_not_found") { client.listChanges("0".repeat(32)) }
    }

    @Test
    fun `a phone that dropped during the run gets its changes_changed in the replay, as an observer saw it`() = blocking {
        // A server of its own, with a proxy the test cuts (as ResumeTest does): the first /sim changes there
        // is the one that changes the list.
        PhebyServer().start().use { fresh ->
            TcpProxy { fresh.port }.use { proxy ->
                val options = PhebyClientOptions(
                    url = proxy.url,
                    secret = fresh.secret,
                    reconnect = ReconnectPolicy(initialDelay = 100.milliseconds, maxDelay = 500.milliseconds),
                )
                PhebyClient(options).use { phone ->
                    phone.connect()
                    fresh.client().use { observer ->
                        val id = phone.createConversation("Changes resumed").conversationId
                        phone.follow(id)
                        phone.openConversation(id)
                        assertTrue(phone.position(id) != null, "the phone has a seq to resume from")
                        val replayed = async(start = CoroutineStart.UNDISPATCHED) { phone.changeUpdates(id).first() }

                        proxy.pause()
                        phone.state.first { it is ConnectionState.Reconnecting }
                        val live = async(start = CoroutineStart.UNDISPATCHED) { observer.changeUpdates(id).first() }
                        checkRun(observer.chat(id, "/sim changes").toList())
                        val seen = live.await()
                        proxy.resume()

                        assertEquals(seen, replayed.await(), "the same event, seq included")
                        assertEquals(3L, seen.fileCount)
                    }
                }
            }
        }
    }

    @Test
    fun `before the simulator made its repository, a conversation is not in a git repository`() = blocking {
        // A server of its own: this class's server has its repository once any test ran /sim changes.
        PhebyServer().start().use { fresh ->
            fresh.client().use { c ->
                val id = c.createConversation("Not in git").conversationId
                val refused = expectPheby("not_implemented") { c.listChanges(id) }
                assertTrue(refused.message!!.contains("not in a git repository"), refused.message)
                expectPheby("not_implemented") { c.diffChange(id, "c-" + "0".repeat(16)) }
            }
        }
    }

    @Test
    fun `a client without changes gets unknown_type for its requests`() = blocking {
        assertFalse(Features.CHANGES in plain.features)
        val id = newConversation("Changes v1")
        expectPheby("unknown_type") { plain.listChanges(id) }
        expectPheby("unknown_type") { plain.diffChange(id, "c-" + "0".repeat(16)) }
    }
}
