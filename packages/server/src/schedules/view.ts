import type { ScheduleRow, ScheduleStatus } from "../store/schedules.js";
import { iso } from "../util/time.js";

/** A schedule as clients and the agent's tools see it (times ISO-8601 UTC). */
export interface ScheduleView {
  schedule_id: string;
  conversation_id: string;
  name: string;
  prompt: string;
  cron: string | null;
  at: string | null;
  timezone: string;
  enabled: boolean;
  next_run_at: string | null;
  last_run_at: string | null;
  last_status: ScheduleStatus | null;
}

const isoOrNull = (ms: number | null) => (ms === null ? null : iso(ms));

/** The wire form of a schedule row. */
export function scheduleView(row: ScheduleRow): ScheduleView {
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
  };
}
