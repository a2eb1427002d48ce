import { z } from "zod/v3";
import { boundedText, event, OpaqueId, request, Timestamp, withFieldRules } from "../common.js";
import { LIMITS, RUN_STATUSES, SCHEDULE_CREATORS } from "../constants.js";

// The `schedules` extension (FEATURE_SCHEDULES): prompts the server sends into a conversation on a
// cron schedule or once at a given time. The schema checks shape and lengths; whether a cron
// expression or a time zone is valid, or a time is in the future, is the server's to say.

const name = boundedText({ max: LIMITS.scheduleNameChars, nonBlank: true });
const prompt = boundedText({ max: LIMITS.chatTextChars, nonBlank: true, tooLarge: true }).describe(
  "Sent as the user message of each run: non-blank, at most 64,000 characters",
);
const cron = z
  .string()
  .max(LIMITS.cronChars)
  .regex(/^\s*\S+(\s+\S+){4}\s*$/, "must have five fields")
  .describe("A standard five-field cron expression (minute hour day-of-month month day-of-week)");
const at = Timestamp.describe("A single run at this time (ISO-8601 with an offset)");
const timezone = z
  .string()
  .min(1)
  .max(LIMITS.timezoneChars)
  .regex(/^[A-Za-z0-9_+/-]+$/, "must be an IANA time zone name")
  .describe("IANA time zone the cron expression is read in (e.g. Europe/Paris); default: the server's");

const autoApprove = z
  .boolean()
  .describe(
    "Let YOLO approve this schedule's runs (default false); true needs the master secret (a device gets bad_request)",
  );

/** A schedule, as every `schedules` message carries it. Exactly one of `cron` and `at` is non-null. */
export const Schedule = z
  .object({
    schedule_id: z.string(),
    conversation_id: z.string(),
    name: z.string().nullable().describe("null when none was given"),
    prompt: z.string(),
    cron: z.string().nullable().describe("null for a one-shot schedule"),
    at: Timestamp.nullable().describe("null for a cron schedule"),
    timezone: z.string().describe("The IANA zone cron is read in (the server's unless one was given)"),
    enabled: z.boolean().describe("false when paused, and for a one-shot schedule once it ran"),
    next_run_at: Timestamp.nullable().describe("null when it will not run again"),
    last_run_at: Timestamp.nullable(),
    last_status: z.enum(RUN_STATUSES).nullable().describe("How its last run ended; null before the first"),
    created_by: z
      .enum(SCHEDULE_CREATORS)
      .describe("user: a client's schedule.create; agent: the agent's schedule_create tool"),
    confirmed: z
      .boolean()
      .describe(
        "true for a user's schedule; an agent's stays false (and disabled) until a client enables it",
      ),
    auto_approve: z
      .boolean()
      .describe("YOLO may approve its runs' permission questions; only the master secret sets it"),
  })
  .describe("A scheduled prompt");

/** `schedule.list`: the schedules of one conversation, or of all. */
export const ScheduleList = request(
  "schedule.list",
  { conversation_id: OpaqueId.optional().describe("Only this conversation's; absent: all") },
  "List schedules",
);

/** `schedule.snapshot`: reply to `schedule.list`. */
export const ScheduleSnapshot = event(
  "schedule.snapshot",
  { schedules: z.array(Schedule).max(LIMITS.schedules).describe("Oldest first") },
  "Schedules",
);

/** `schedule.create`: exactly one of `cron` and `at`. */
export const ScheduleCreate = withFieldRules(
  request(
    "schedule.create",
    {
      conversation_id: OpaqueId,
      prompt,
      cron: cron.optional(),
      at: at.optional(),
      timezone: timezone.optional(),
      name: name.optional(),
      auto_approve: autoApprove.optional(),
    },
    "Create a schedule (exactly one of cron and at)",
  ),
  [{ kind: "exactlyOne", keys: ["cron", "at"] }],
);

/** `schedule.created`: reply to `schedule.create` (the other `schedules` connections get `schedule.changed`). */
export const ScheduleCreated = event("schedule.created", { schedule: Schedule }, "A schedule was created");

/**
 * `schedule.update`: change any of a schedule's settings; at least one, and not both `cron` and `at`.
 * Sending one of them makes that the trigger (the other becomes null).
 */
export const ScheduleUpdate = withFieldRules(
  request(
    "schedule.update",
    {
      schedule_id: OpaqueId,
      name: name.nullable().optional().describe("null removes the name"),
      prompt: prompt.optional(),
      cron: cron.optional(),
      at: at.optional(),
      timezone: timezone.optional(),
      enabled: z
        .boolean()
        .optional()
        .describe("true also confirms a schedule the agent made (confirmed becomes true)"),
      auto_approve: autoApprove.optional(),
    },
    "Change a schedule",
  ),
  [
    { kind: "atMostOne", keys: ["cron", "at"] },
    { kind: "atLeastOne", keys: ["name", "prompt", "cron", "at", "timezone", "enabled", "auto_approve"] },
  ],
);

/** `schedule.delete`. */
export const ScheduleDelete = request("schedule.delete", { schedule_id: OpaqueId }, "Delete a schedule");

/**
 * `schedule.changed`: reply to `schedule.update` / `schedule.delete`, and broadcast to every
 * `schedules` connection on any change (creation and runs included).
 */
export const ScheduleChanged = event(
  "schedule.changed",
  {
    // Its new state; its last state when deleted.
    schedule: Schedule,
    deleted: z.boolean().describe("true: the schedule is gone, and schedule is its last state"),
  },
  "A schedule changed",
);

/** Parsed form of {@link Schedule}. */
export type Schedule = z.infer<typeof Schedule>;
