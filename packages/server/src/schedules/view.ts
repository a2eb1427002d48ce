import type { Schedule } from "@pheby/protocol";
import type { ScheduleRow } from "../store/schedules.js";
import { iso } from "../util/time.js";

const isoOrNull = (ms: number | null) => (ms === null ? null : iso(ms));

/** The wire form of a schedule row, as every `schedules` message and the agent's tools carry it. */
export function scheduleView(row: ScheduleRow): Schedule {
  return {
    schedule_id: row.id,
    conversation_id: row.conversation_id,
    name: row.name,
    prompt: row.prompt,
    cron: row.cron,
    at: isoOrNull(row.at),
    timezone: row.timezone,
    enabled: row.enabled,
    next_run_at: isoOrNull(row.next_run_at),
    last_run_at: isoOrNull(row.last_run_at),
    last_status: row.last_status,
    created_by: row.created_by,
    confirmed: row.confirmed,
    auto_approve: row.auto_approve,
  };
}
