import type { ScheduleCreator } from "@pheby/protocol";
import type Database from "better-sqlite3";

/**
 * Migration step of the `schedules` table (scheduled prompts): appended to `MIGRATIONS` in `migrations.ts`.
 *
 * Exactly one of `cron` / `at` is set (CHECK). Times are epoch ms. A one-shot schedule that ran
 * keeps its row with `enabled = 0` until it is deleted. `last_status` is how the latest finished
 * run ended; `in_flight` marks a fired run that has not ended yet, so a restart can record it
 * `failed` (the server stopped during it) like the runs table does.
 */
export const SCHEDULES_MIGRATION = `
  CREATE TABLE schedules (
    id              TEXT PRIMARY KEY,      -- 32 hex, the wire schedule_id
    conversation_id TEXT NOT NULL REFERENCES conversations (id),
    name            TEXT,                  -- null: none given
    prompt          TEXT NOT NULL,
    cron            TEXT,                  -- five-field expression, evaluated in timezone
    at              INTEGER,               -- one-shot time
    timezone        TEXT NOT NULL,         -- IANA name
    enabled         INTEGER NOT NULL CHECK (enabled IN (0, 1)),
    next_run_at     INTEGER,               -- null when disabled or never due again
    last_run_at     INTEGER,               -- when the latest run started
    last_status     TEXT CHECK (last_status IN ('completed', 'cancelled', 'failed')),
    in_flight       INTEGER NOT NULL DEFAULT 0 CHECK (in_flight IN (0, 1)),
    created_at      INTEGER NOT NULL,
    CHECK ((cron IS NULL) <> (at IS NULL))
  );
  CREATE INDEX schedules_conversation ON schedules (conversation_id, created_at);
  CREATE INDEX schedules_due ON schedules (next_run_at) WHERE enabled = 1;
`;

/** How a schedule's latest finished run ended (a run's `run.finished.status`). */
export type ScheduleStatus = "completed" | "cancelled" | "failed";

/** A schedule row (times in epoch ms, flags as booleans). */
export interface ScheduleRow {
  id: string;
  conversation_id: string;
  name: string | null;
  prompt: string;
  cron: string | null;
  at: number | null;
  timezone: string;
  enabled: boolean;
  next_run_at: number | null;
  last_run_at: number | null;
  last_status: ScheduleStatus | null;
  /** A fired run has not ended yet. */
  in_flight: boolean;
  created_at: number;
  /** A client's (`user`) or the agent's, through Pheby's `schedule_create` tool. */
  created_by: ScheduleCreator;
  /** The paired device whose request made it; null: the owner, or the agent. */
  device_id: string | null;
  /** False for an agent's schedule until a client enables it. */
  confirmed: boolean;
  /** YOLO may approve its runs' permission questions. */
  auto_approve: boolean;
}

/** The fields a change may set. */
export type ScheduleChange = Partial<
  Omit<ScheduleRow, "id" | "conversation_id" | "created_at" | "created_by" | "device_id">
>;

/** The boolean columns, stored as 0 / 1. */
const FLAGS = ["enabled", "in_flight", "confirmed", "auto_approve"] as const;
type Flag = (typeof FLAGS)[number];
type Raw = Omit<ScheduleRow, Flag> & Record<Flag, number>;

const fromRaw = (raw: Raw): ScheduleRow => {
  const row = { ...raw } as unknown as ScheduleRow;
  for (const flag of FLAGS) row[flag] = raw[flag] === 1;
  return row;
};

const toRaw = (row: ScheduleRow): Raw => {
  const raw = { ...row } as unknown as Raw;
  for (const flag of FLAGS) raw[flag] = row[flag] ? 1 : 0;
  return raw;
};

const COLUMNS = new Set<keyof ScheduleChange>([
  "name",
  "prompt",
  "cron",
  "at",
  "timezone",
  "enabled",
  "next_run_at",
  "last_run_at",
  "last_status",
  "in_flight",
  "confirmed",
  "auto_approve",
]);

/** Typed queries of the `schedules` table. Synchronous, like the rest of the store. */
export class ScheduleStore {
  constructor(private readonly db: Database.Database) {}

  insert(row: ScheduleRow): void {
    this.db
      .prepare(
        `INSERT INTO schedules (id, conversation_id, name, prompt, cron, at, timezone, enabled, next_run_at, last_run_at, last_status, in_flight, created_at, created_by, device_id, confirmed, auto_approve)
         VALUES (@id, @conversation_id, @name, @prompt, @cron, @at, @timezone, @enabled, @next_run_at, @last_run_at, @last_status, @in_flight, @created_at, @created_by, @device_id, @confirmed, @auto_approve)`,
      )
      .run(toRaw(row));
  }

  get(id: string): ScheduleRow | undefined {
    const raw = this.db.prepare("SELECT * FROM schedules WHERE id = ?").get(id) as Raw | undefined;
    return raw && fromRaw(raw);
  }

  /** All schedules, or a conversation's, oldest first. */
  list(conversationId?: string): ScheduleRow[] {
    const rows =
      conversationId === undefined
        ? this.db.prepare("SELECT * FROM schedules ORDER BY created_at, rowid").all()
        : this.db
            .prepare("SELECT * FROM schedules WHERE conversation_id = ? ORDER BY created_at, rowid")
            .all(conversationId);
    return (rows as Raw[]).map(fromRaw);
  }

  count(): number {
    return (this.db.prepare("SELECT COUNT(*) AS n FROM schedules").get() as { n: number }).n;
  }

  /**
   * Insert `row` only while the table holds fewer than `max` rows, atomically (two requests
   * racing for the last slot cannot both win). Returns whether it was inserted.
   */
  insertBelow(row: ScheduleRow, max: number): boolean {
    return this.db.transaction(() => {
      if (this.count() >= max) return false;
      this.insert(row);
      return true;
    })();
  }

  /** Apply `change` and return the updated row (undefined when the row is gone). */
  update(id: string, change: ScheduleChange): ScheduleRow | undefined {
    const keys = Object.keys(change).filter((k) => COLUMNS.has(k as keyof ScheduleChange));
    if (keys.length > 0) {
      const values: Record<string, unknown> = { id };
      for (const k of keys) {
        const v = change[k as keyof ScheduleChange];
        values[k] = typeof v === "boolean" ? (v ? 1 : 0) : v;
      }
      this.db
        .prepare(`UPDATE schedules SET ${keys.map((k) => `${k} = @${k}`).join(", ")} WHERE id = @id`)
        .run(values);
    }
    return this.get(id);
  }

  /** Delete a schedule; returns its last state, or undefined when there was none. */
  delete(id: string): ScheduleRow | undefined {
    return this.db.transaction(() => {
      const row = this.get(id);
      if (row) this.db.prepare("DELETE FROM schedules WHERE id = ?").run(id);
      return row;
    })();
  }

  /** Delete every schedule of a conversation (it is being deleted); returns their last states. */
  deleteForConversation(conversationId: string): ScheduleRow[] {
    return this.db.transaction(() => {
      const rows = this.list(conversationId);
      this.db.prepare("DELETE FROM schedules WHERE conversation_id = ?").run(conversationId);
      return rows;
    })();
  }

  /** Delete every schedule a device made (it was revoked); returns their last states. */
  deleteForDevice(deviceId: string): ScheduleRow[] {
    return this.db.transaction(() => {
      const rows = (
        this.db
          .prepare("SELECT * FROM schedules WHERE device_id = ? ORDER BY created_at, rowid")
          .all(deviceId) as Raw[]
      ).map(fromRaw);
      this.db.prepare("DELETE FROM schedules WHERE device_id = ?").run(deviceId);
      return rows;
    })();
  }

  /** Enabled schedules due at `now` (next_run_at <= now), earliest first. */
  due(now: number): ScheduleRow[] {
    return (
      this.db
        .prepare(
          "SELECT * FROM schedules WHERE enabled = 1 AND next_run_at IS NOT NULL AND next_run_at <= ? ORDER BY next_run_at, rowid",
        )
        .all(now) as Raw[]
    ).map(fromRaw);
  }

  /** The earliest next_run_at of an enabled schedule, or null. */
  nextDue(): number | null {
    const row = this.db
      .prepare("SELECT MIN(next_run_at) AS at FROM schedules WHERE enabled = 1 AND next_run_at IS NOT NULL")
      .get() as { at: number | null };
    return row.at;
  }

  /** Runs a crash or shutdown left in flight are recorded `failed`; returns the rows changed. */
  failInterrupted(): ScheduleRow[] {
    return this.db.transaction(() => {
      const rows = (this.db.prepare("SELECT * FROM schedules WHERE in_flight = 1").all() as Raw[]).map(
        fromRaw,
      );
      this.db.prepare("UPDATE schedules SET in_flight = 0, last_status = 'failed' WHERE in_flight = 1").run();
      return rows.map((r) => ({ ...r, in_flight: false, last_status: "failed" as const }));
    })();
  }
}
