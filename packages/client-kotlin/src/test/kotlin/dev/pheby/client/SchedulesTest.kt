package dev.pheby.client

import dev.pheby.protocol.MessageRole
import dev.pheby.protocol.OptionalNullable
import dev.pheby.protocol.RunAccepted
import dev.pheby.protocol.RunFinished
import dev.pheby.protocol.RunStatus
import dev.pheby.protocol.ScheduleChanged
import dev.pheby.protocol.ScheduleCreated
import dev.pheby.protocol.ScheduleCreator
import dev.pheby.protocol.ServerMessage
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.async
import kotlinx.coroutines.flow.filter
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.flow.takeWhile
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.flow.transformWhile
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.AfterAll
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNotNull
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import java.time.Instant
import java.time.temporal.ChronoUnit

/**
 * The `schedules` extension against the real server: the typed calls, the broadcasts every `schedules`
 * client gets, the server's refusals as typed errors (limits at their exact boundary), a one-shot
 * schedule that really fires, and a connection without the feature.
 */
class SchedulesTest : ServerTest() {
    /** Two clients that asked for `schedules`: one acts, the other watches the broadcasts. */
    private val owner = runBlocking { server.client { copy(features = features + Features.SCHEDULES) } }
    private val watcher = runBlocking { server.client { copy(features = features + Features.SCHEDULES) } }

    @AfterAll
    fun closeClients() {
        owner.close()
        watcher.close()
    }

    /** An `at` [seconds] from now, in whole milliseconds (the server keeps no finer time). */
    private fun inFuture(seconds: Long): String = Instant.now().truncatedTo(ChronoUnit.MILLIS).plusSeconds(seconds).toString()

    @Test
    fun `schedules are created, listed, updated and deleted, and every schedules client sees each change`() = blocking {
        val id = newConversation("Scheduled")
        val seen = async(start = CoroutineStart.UNDISPATCHED) {
            watcher.events.filter { it is ScheduleChanged && it.schedule.conversationId == id }.transformWhile { emit(it as ScheduleChanged); !it.deleted }.toList()
        }
        assertTrue(Features.SCHEDULES in owner.features)

        val created = owner.createSchedule(id, "Summarise my inbox", cron = "0 8 * * 1-5", timezone = "Europe/Paris", name = "Weekday inbox").schedule
        assertEquals("Weekday inbox", created.name)
        assertEquals("0 8 * * 1-5", created.cron)
        assertNull(created.at)
        assertEquals("Europe/Paris", created.timezone)
        assertTrue(created.enabled)
        assertNotNull(created.nextRunAt)
        assertNull(created.lastRunAt)
        assertNull(created.lastStatus)
        assertEquals(ScheduleCreator.USER, created.createdBy)
        assertTrue(created.confirmed, "a client's schedule is confirmed")
        assertFalse(created.autoApprove)
        // The owner (the master secret) may let YOLO approve a schedule's runs.
        val once = owner.createSchedule(id, "Remind me", at = inFuture(3600), autoApprove = true).schedule
        assertTrue(once.autoApprove)
        assertNull(once.name)
        assertNull(once.cron)
        assertEquals(listOf(created, once), owner.listSchedules(id).schedules, "oldest first")
        assertTrue(owner.listSchedules().schedules.containsAll(listOf(created, once)), "without a conversation: all")

        // Absent keeps the name, a value renames, null removes it; enabled pauses and resumes.
        val paused = owner.updateSchedule(created.scheduleId, enabled = false)
        assertFalse(paused.deleted)
        assertEquals("Weekday inbox", paused.schedule.name)
        assertFalse(paused.schedule.enabled)
        assertNull(paused.schedule.nextRunAt, "a paused schedule will not run")
        val renamed = owner.updateSchedule(created.scheduleId, name = OptionalNullable.Value("Inbox"), enabled = true).schedule
        assertEquals("Inbox", renamed.name)
        assertTrue(renamed.enabled)
        assertNotNull(renamed.nextRunAt)
        val unnamed = owner.updateSchedule(created.scheduleId, name = OptionalNullable.Value(null), prompt = "Summarise my inbox briefly").schedule
        assertNull(unnamed.name)
        assertEquals("Summarise my inbox briefly", unnamed.prompt)
        val at = inFuture(7200)
        val oneShot = owner.updateSchedule(created.scheduleId, at = at).schedule
        assertNull(oneShot.cron, "at replaces cron")
        assertEquals(Instant.parse(at), Instant.parse(oneShot.at))
        assertEquals(listOf(oneShot, once), owner.listSchedules(id).schedules)

        val deleted = owner.deleteSchedule(created.scheduleId)
        assertTrue(deleted.deleted)
        assertEquals(oneShot, deleted.schedule, "a deleted schedule's last state")
        assertEquals(listOf(once), owner.listSchedules(id).schedules)

        // The watcher got each change as a broadcast (no request_id), the creation included.
        val changes = seen.await()
        assertTrue(changes.all { it.requestId == null })
        assertEquals(listOf(created, once, paused.schedule, renamed, unnamed, oneShot, oneShot), changes.map { it.schedule })
        assertEquals(listOf(false, false, false, false, false, false, true), changes.map { it.deleted })
        owner.deleteSchedule(once.scheduleId)
    }

    @Test
    fun `refusals are typed errors naming the rule, limits hold at their exact boundary`() = blocking {
        val id = newConversation("Refused")
        val cron = "0 8 * * *"
        assertTrue(expectPheby("bad_request") { owner.createSchedule(id, "p", cron = "61 8 * * *") }.message!!.startsWith("cron is not a valid expression"))
        expectPheby("bad_request") { owner.createSchedule(id, "p", cron = "0 8 * *") }
        assertEquals("cron never matches a date (e.g. 31 February)", expectPheby("bad_request") { owner.createSchedule(id, "p", cron = "0 8 31 2 *") }.message)
        assertTrue(expectPheby("bad_request") { owner.createSchedule(id, "p", cron = cron, timezone = "Mars/Olympus_Mons") }.message!!.startsWith("timezone is not a known IANA time zone"))
        assertEquals("at is in the past", expectPheby("bad_request") { owner.createSchedule(id, "p", at = "2020-01-01T08:00:00+01:00") }.message)
        expectPheby("bad_request") { owner.createSchedule(id, "p", at = "2099-01-01T08:00:00") } // no offset
        expectPheby("conversation_not_found") { owner.createSchedule(UNKNOWN_ID, "p", cron = cron) }
        expectPheby("not_found") { owner.updateSchedule(UNKNOWN_ID, enabled = false) }
        expectPheby("not_found") { owner.deleteSchedule(UNKNOWN_ID) }

        // Both cron and at, or neither, or an update of nothing: the models cannot even build such a frame
        // (the schema forbids it), so it is refused before anything is sent. (The server's own refusal of
        // such a frame, bad_request, is checked by conformance `extensions.schedules`.)
        assertThrows<IllegalArgumentException> { owner.createSchedule(id, "p", cron = cron, at = inFuture(60)) }
        assertThrows<IllegalArgumentException> { owner.createSchedule(id, "p") }
        assertThrows<IllegalArgumentException> { owner.updateSchedule(UNKNOWN_ID) }

        // Exact limits: a prompt of 64,000 characters and a name of 200 are accepted, one more is refused.
        val longest = owner.createSchedule(id, "p".repeat(64_000), cron = cron, name = "n".repeat(200)).schedule
        assertEquals(64_000, longest.prompt.length)
        assertEquals(200, longest.name!!.length)
        expectPheby("too_large") { owner.createSchedule(id, "p".repeat(64_001), cron = cron) }
        expectPheby("bad_request") { owner.createSchedule(id, "p", cron = cron, name = "n".repeat(201)) }
        expectPheby("too_large") { owner.updateSchedule(longest.scheduleId, prompt = "p".repeat(64_001)) }
        assertEquals(listOf(longest), owner.listSchedules(id).schedules, "nothing refused was stored")
        owner.ping() // the connection is still usable
        owner.deleteSchedule(longest.scheduleId)
    }

    @Test
    fun `the agent's schedule waits unconfirmed until confirmSchedule, and autoApprove is the owner's to switch`() = blocking {
        val id = newConversation("Agent's")
        val made = async(start = CoroutineStart.UNDISPATCHED) {
            watcher.events.first { it is ScheduleChanged && it.schedule.conversationId == id } as ScheduleChanged
        }
        val ran = async(start = CoroutineStart.UNDISPATCHED) {
            owner.events.first { it is RunFinished && it.conversationId == id } as RunFinished
        }
        // The simulator schedules itself through Pheby's schedule_create tool, as a real agent does.
        owner.sendMessage(id, "/sim schedule Water the plants")
        val waiting = made.await().schedule
        assertEquals(RunStatus.COMPLETED, ran.await().status)
        assertEquals(ScheduleCreator.AGENT, waiting.createdBy)
        assertEquals("Water the plants", waiting.prompt)
        assertFalse(waiting.confirmed)
        assertFalse(waiting.enabled)
        assertNull(waiting.nextRunAt, "it does not run before the user confirms it")

        val confirmed = owner.confirmSchedule(waiting.scheduleId)
        assertFalse(confirmed.deleted)
        assertTrue(confirmed.schedule.confirmed)
        assertTrue(confirmed.schedule.enabled)
        assertNotNull(confirmed.schedule.nextRunAt)
        assertEquals(ScheduleCreator.AGENT, confirmed.schedule.createdBy, "still the agent's")
        assertFalse(confirmed.schedule.autoApprove)
        assertTrue(owner.updateSchedule(waiting.scheduleId, autoApprove = true).schedule.autoApprove)
        assertFalse(owner.updateSchedule(waiting.scheduleId, autoApprove = false).schedule.autoApprove)
        owner.deleteSchedule(waiting.scheduleId)
    }

    @Test
    fun `a one-shot schedule fires - its run reaches every client, schedule_changed records how it ended`() = blocking {
        val id = newConversation("Fires")
        // The run is an ordinary one, for every connection; its schedule's changes only for schedules clients.
        val run = async(start = CoroutineStart.UNDISPATCHED) {
            owner.events.filter { it.conversationIdOrNull() == id }.transformWhile { emit(it); it !is RunFinished }.toList()
        }
        val v1Frames = async(start = CoroutineStart.UNDISPATCHED) {
            client.events.takeWhile { !(it is RunFinished && it.conversationId == id) }.toList()
        }
        val ended = async(start = CoroutineStart.UNDISPATCHED) {
            owner.events.first { it is ScheduleChanged && it.schedule.conversationId == id && it.schedule.lastStatus != null } as ScheduleChanged
        }
        // Two seconds ahead: the server refuses an `at` already past when the request arrives.
        val schedule = owner.createSchedule(id, "scheduled hello", at = inFuture(2), name = "Soon").schedule

        val frames = run.await().dropWhile { it !is RunAccepted }
        assertNull(frames.first().requestId, "nobody on the socket asked for it")
        assertTrue(checkRun(frames).contains("scheduled hello"))
        val finished = ended.await().schedule
        assertEquals(schedule.scheduleId, finished.scheduleId)
        assertEquals(RunStatus.COMPLETED, finished.lastStatus)
        assertFalse(finished.enabled, "a one-shot schedule is done once it ran")
        assertNull(finished.nextRunAt)
        assertNotNull(finished.lastRunAt)
        assertEquals(listOf("scheduled hello"), owner.openConversation(id).messages.filter { it.role == MessageRole.USER }.map { it.text })

        // The client without the feature got the run, and no schedule frame before its end (the firing's came before its start).
        assertTrue(v1Frames.await().none { it is ScheduleChanged || it is ScheduleCreated })
        assertTrue(v1Frames.await().any { it is RunAccepted && it.conversationId == id })
    }

    @Test
    fun `a connection that did not ask for schedules gets unknown_type`() = blocking {
        assertFalse(Features.SCHEDULES in client.features, "not asked for by default")
        val id = newConversation("No schedules")
        expectPheby("unknown_type") { client.listSchedules() }
        expectPheby("unknown_type") { client.createSchedule(id, "p", cron = "0 8 * * *") }
        expectPheby("unknown_type") { client.updateSchedule(UNKNOWN_ID, enabled = false) }
        expectPheby("unknown_type") { client.deleteSchedule(UNKNOWN_ID) }
        assertEquals(emptyList<ServerMessage>(), owner.listSchedules(id).schedules, "nothing was created")
    }
}
