package dev.pheby.client

// The `schedules` extension (docs/protocol.md, "Extension: scheduled prompts"): prompts the server sends
// to a conversation's agent on a cron expression or once, at a time. Ask for it in
// PhebyClientOptions.features (it is not asked for by default, as in @pheby/client); every change, by
// this client, another device, the agent's own schedule tools or a run, arrives as `schedule.changed` on
// PhebyClient.events. A schedule's run is an ordinary run (`run.accepted` without `request_id`). Without
// the feature the server answers these requests `unknown_type`, as @pheby/client leaves it to do.

import dev.pheby.protocol.OptionalNullable
import dev.pheby.protocol.ScheduleChanged
import dev.pheby.protocol.ScheduleCreate
import dev.pheby.protocol.ScheduleCreated
import dev.pheby.protocol.ScheduleDelete
import dev.pheby.protocol.ScheduleList
import dev.pheby.protocol.ScheduleSnapshot
import dev.pheby.protocol.ScheduleUpdate

/**
 * `schedule.list`: the schedules of [conversationId] (null: of every conversation), oldest first, each
 * with its `nextRunAt`, `lastRunAt` and `lastStatus`.
 */
suspend fun PhebyClient.listSchedules(conversationId: String? = null): ScheduleSnapshot =
    request(ScheduleList(conversationId = conversationId))

/**
 * `schedule.create`: sends [prompt] (non-blank, at most 64,000 characters, else `too_large`) to the
 * agent of [conversationId] as a run, either on [cron] (five fields: minute hour day-of-month month
 * day-of-week, read in [timezone], an IANA name; null: the server's zone) or once, at [at] (ISO-8601
 * with an offset, e.g. `2026-12-24T08:00:00+01:00`). Exactly one of [cron] and [at]: giving both or
 * neither throws [IllegalArgumentException] before anything is sent (the schema forbids it). [name]:
 * a label for lists (at most 200 characters). [autoApprove]: let YOLO approve its runs' permission
 * questions (a run nobody started from a client is otherwise never auto-approved); `true` needs the
 * master secret (a paired device gets `bad_request`).
 *
 * Returns the new schedule (`schedule.created`); the other `schedules` clients get `schedule.changed`.
 * Throws [PhebyException]: `bad_request` naming the rule (a cron expression or time zone the server
 * cannot use, an `at` in the past, the 101st schedule of the server), `conversation_not_found`,
 * `too_large`, and `unknown_type` when the connection did not enable [Features.SCHEDULES].
 */
suspend fun PhebyClient.createSchedule(
    conversationId: String,
    prompt: String,
    cron: String? = null,
    at: String? = null,
    timezone: String? = null,
    name: String? = null,
    autoApprove: Boolean? = null,
): ScheduleCreated = request(
    ScheduleCreate(
        conversationId = conversationId,
        prompt = prompt,
        cron = cron,
        at = at,
        timezone = timezone,
        name = name,
        autoApprove = autoApprove,
    ),
)

/**
 * `schedule.update`: changes only what it is given; at least one field (else [IllegalArgumentException]).
 *
 * @param name [OptionalNullable.Absent] (the default) keeps the name, `OptionalNullable.Value("…")`
 *   renames it, `OptionalNullable.Value(null)` removes it (the wire's `name: null`).
 * @param cron Makes it a repeating schedule (its `at` is cleared); not together with [at].
 * @param at Makes it a one-shot schedule (its `cron` is cleared); must be in the future.
 * @param enabled false pauses it, true resumes it (a one-shot schedule whose time has passed:
 *   `bad_request` "at is in the past"); true also confirms a schedule the agent made ([confirmSchedule]).
 * @param autoApprove Let YOLO approve its runs, or stop it; `true` needs the master secret (a paired
 *   device gets `bad_request`).
 * @return its new state (`schedule.changed`, `deleted` false); the other `schedules` clients get the same
 *   event without `requestId`. Throws [PhebyException] as [createSchedule] does, and `not_found` for an
 *   unknown [scheduleId].
 */
suspend fun PhebyClient.updateSchedule(
    scheduleId: String,
    name: OptionalNullable<String> = OptionalNullable.Absent,
    prompt: String? = null,
    cron: String? = null,
    at: String? = null,
    timezone: String? = null,
    enabled: Boolean? = null,
    autoApprove: Boolean? = null,
): ScheduleChanged = request(
    ScheduleUpdate(
        scheduleId = scheduleId,
        name = name,
        prompt = prompt,
        cron = cron,
        at = at,
        timezone = timezone,
        enabled = enabled,
        autoApprove = autoApprove,
    ),
)

/**
 * Confirm a schedule the agent made (`createdBy` [dev.pheby.protocol.ScheduleCreator.AGENT],
 * `confirmed` false): `schedule.update { enabled: true }`, after which it runs like the user's own.
 * Returns its new state, `confirmed` true.
 */
suspend fun PhebyClient.confirmSchedule(scheduleId: String): ScheduleChanged =
    updateSchedule(scheduleId, enabled = true)

/**
 * `schedule.delete`: its last state with `deleted` true (the other `schedules` clients get the same
 * event). A run it already started goes on. An unknown [scheduleId]: `not_found`.
 */
suspend fun PhebyClient.deleteSchedule(scheduleId: String): ScheduleChanged = request(ScheduleDelete(scheduleId = scheduleId))
