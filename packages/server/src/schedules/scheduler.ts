/**
 * The scheduler: Pheby-owned scheduled prompts, persisted in SQLite, fired through a callback
 * that runs the prompt in its conversation as a run nobody on the socket asked for.
 *
 * One timer is armed for the earliest due schedule (re-armed at most a minute ahead, so a wall
 * clock that jumps is noticed within a minute). Time comes from an injectable clock and timer
 * functions, so tests move time instead of waiting for it.
 *
 * Firing is at most once per occurrence: the row is advanced (next_run_at, last_run_at,
 * `running`) before the prompt is sent, so a crash mid-run never repeats it. An occurrence
 * that comes due while the previous run of the same schedule is still waiting or running is
 * skipped: a slow agent never builds up a backlog of scheduled runs.
 */

import type { ScheduleCreator } from "@pheby/protocol";
import type { ScheduleChange, ScheduleRow, ScheduleStore } from "../store/schedules.js";
import { newId } from "../util/ids.js";
import { type Clock, iso, systemTimers, type Timers } from "../util/time.js";
import {
  checkAt,
  checkCron,
  checkName,
  checkPrompt,
  checkTimezone,
  DEFAULT_MISSED_GRACE_MS,
  latestOccurrence,
  MAX_SCHEDULES,
  nextOccurrence,
  ScheduleError,
  serverTimezone,
} from "./rules.js";

export type { Timers } from "../util/time.js";

/** A timer is never armed further ahead than this, so wall-clock jumps are caught up within it. */
const MAX_TIMER_MS = 60_000;

/** How a fired run ended; `gone`: its conversation no longer exists. */
export type FireOutcome = "completed" | "cancelled" | "failed" | "gone";

/** A new schedule. Exactly one of `cron` and `at` (an ISO-8601 string with an offset). */
export interface ScheduleInput {
  conversationId: string;
  prompt: string;
  cron?: string | null;
  at?: string | null;
  timezone?: string | null;
  name?: string | null;
  /**
   * Who makes it (default a client, `user`). The agent's schedule is stored disabled and
   * unconfirmed: it never runs until a client enables it.
   */
  createdBy?: ScheduleCreator;
  /** The paired device whose request makes it (default none: the owner, or the agent). */
  deviceId?: string | null;
  /** Let YOLO approve its runs (default false; never for the agent's). */
  autoApprove?: boolean;
}

/**
 * A change of a schedule: the fields given replace the current ones. Giving `cron` or `at` makes
 * it the trigger and clears the other; `name: null` removes the name.
 */
export interface SchedulePatch {
  name?: string | null;
  prompt?: string;
  cron?: string;
  at?: string;
  timezone?: string;
  /** `true` also confirms an agent's schedule. */
  enabled?: boolean;
  auto_approve?: boolean;
}

/** One change of a schedule, as {@link SchedulerOptions.changed} hears of it. */
export interface ScheduleChangeEvent {
  schedule: ScheduleRow;
  /** The schedule is gone; `schedule` is its last state. */
  deleted: boolean;
  /** It was just created. */
  created: boolean;
  /**
   * What the caller of {@link Scheduler.create} / `update` / `delete` passed (e.g. the requesting
   * connection, which gets a direct reply); undefined for the scheduler's own changes.
   */
  origin: unknown;
}

/** What the scheduler needs. */
export interface SchedulerOptions {
  store: ScheduleStore;
  clock: Clock;
  timers?: Timers;
  log: {
    info(obj: object, msg?: string): void;
    warn(obj: object, msg?: string): void;
    error(obj: object, msg?: string): void;
  };
  /** Whether a live (not deleted) conversation has this ID. */
  conversationExists(conversationId: string): boolean;
  /** Send the schedule's prompt in its conversation; resolves when that run has ended. */
  fire(schedule: ScheduleRow): Promise<FireOutcome>;
  /** Every change of a schedule: created, updated, deleted, fired, finished. */
  changed?(change: ScheduleChangeEvent): void;
  /** A missed occurrence younger than this still runs (once) at start. Default 1 hour. */
  missedGraceMs?: number;
  /** Time zone of schedules created without one. Default: the server's. */
  defaultTimezone?: string;
  /** At most this many schedules on the server. Default {@link MAX_SCHEDULES}. */
  maxSchedules?: number;
}

/** Pheby's scheduler. Call {@link start} once the run engine can take runs. */
export class Scheduler {
  readonly #o: SchedulerOptions;
  readonly #timers: Timers;
  readonly #graceMs: number;
  readonly #defaultTimezone: string;
  readonly #max: number;
  /** Schedules whose last fired run has not ended yet. */
  readonly #inflight = new Set<string>();
  #timer: unknown;
  #started = false;
  #closed = false;

  constructor(options: SchedulerOptions) {
    this.#o = options;
    this.#timers = options.timers ?? systemTimers;
    this.#graceMs = options.missedGraceMs ?? DEFAULT_MISSED_GRACE_MS;
    this.#defaultTimezone = checkTimezone(options.defaultTimezone ?? serverTimezone());
    this.#max = options.maxSchedules ?? MAX_SCHEDULES;
    if (!Number.isFinite(this.#graceMs) || this.#graceMs < 0) {
      throw new Error("Scheduler: missedGraceMs must be a number >= 0");
    }
  }

  /** The default time zone of new schedules. */
  get defaultTimezone(): string {
    return this.#defaultTimezone;
  }

  /**
   * Start: runs interrupted by the last shutdown are recorded `failed`; an occurrence missed
   * while the server was down runs once now if it is younger than the grace; an older one is
   * skipped (a one-shot schedule is then disabled without a run); then the timer is armed.
   */
  start(): void {
    if (this.#started || this.#closed) return;
    this.#started = true;
    const { store } = this.#o;
    for (const row of store.failInterrupted()) this.#emit(row);
    const now = this.#o.clock.now();
    for (const row of store.due(now)) {
      const latest = latestOccurrence(row, now);
      if (latest !== null && now - latest < this.#graceMs) {
        this.#fire(row, now);
      } else {
        this.#change(row.id, { next_run_at: nextOccurrence(row, now), enabled: row.cron !== null });
        this.#o.log.info({ schedule: row.id }, "missed scheduled run skipped (older than the grace)");
      }
    }
    this.#arm();
  }

  /** Stop firing. Runs already sent go on; their outcome is still recorded. */
  close(): void {
    this.#closed = true;
    this.#timers.clearTimeout(this.#timer);
  }

  /** One schedule, or throws `not_found`. */
  get(id: string): ScheduleRow {
    const row = this.#o.store.get(id);
    if (!row) throw new ScheduleError("not_found", "No such schedule");
    return row;
  }

  /** All schedules, or one conversation's, oldest first. */
  list(conversationId?: string): ScheduleRow[] {
    return this.#o.store.list(conversationId);
  }

  /** Create a schedule. Throws {@link ScheduleError} saying which rule a bad request breaks. */
  create(input: ScheduleInput, origin?: unknown): ScheduleRow {
    const now = this.#o.clock.now();
    const prompt = checkPrompt(input.prompt);
    const name = input.name == null ? null : checkName(input.name);
    const timezone = input.timezone == null ? this.#defaultTimezone : checkTimezone(input.timezone);
    const when = this.#when(input.cron ?? null, input.at ?? null, timezone, now);
    if (!this.#o.conversationExists(input.conversationId)) {
      throw new ScheduleError("conversation_not_found", "Conversation not found");
    }
    const byAgent = input.createdBy === "agent";
    const row: ScheduleRow = {
      id: newId(),
      conversation_id: input.conversationId,
      name,
      prompt,
      ...when,
      timezone,
      enabled: !byAgent,
      next_run_at: byAgent ? null : nextOccurrence({ ...when, timezone }, now),
      last_run_at: null,
      last_status: null,
      in_flight: false,
      created_at: now,
      created_by: byAgent ? "agent" : "user",
      device_id: input.deviceId ?? null,
      confirmed: !byAgent,
      auto_approve: !byAgent && input.autoApprove === true,
    };
    if (!this.#o.store.insertBelow(row, this.#max)) {
      throw new ScheduleError("bad_request", `A server holds at most ${this.#max} schedules`);
    }
    this.#emit(row, { created: true, origin });
    this.#arm();
    return row;
  }

  /** Change a schedule. Throws `not_found`, or `bad_request` saying which rule. */
  update(id: string, patch: SchedulePatch, origin?: unknown): ScheduleRow {
    const current = this.get(id);
    const now = this.#o.clock.now();
    const change: ScheduleChange = {};
    if (patch.name !== undefined) change.name = patch.name === null ? null : checkName(patch.name);
    if (patch.prompt !== undefined) change.prompt = checkPrompt(patch.prompt);
    if (patch.timezone !== undefined) change.timezone = checkTimezone(patch.timezone);
    const timezone = change.timezone ?? current.timezone;
    const timing = patch.cron !== undefined || patch.at !== undefined || change.timezone !== undefined;
    const enabled = patch.enabled ?? current.enabled;
    if (timing || (enabled && !current.enabled)) {
      // The trigger as it will be, checked as a whole: the one given replaces both, else the current one.
      const given = patch.cron !== undefined || patch.at !== undefined;
      const cron = given ? (patch.cron ?? null) : current.cron;
      const at = given ? (patch.at ?? null) : current.at === null ? null : iso(current.at);
      // A disabled schedule may keep a time in the past; enabling it needs a future one.
      Object.assign(change, this.#when(cron, at, timezone, enabled ? now : Number.NEGATIVE_INFINITY));
    }
    change.enabled = enabled;
    // Enabling is the confirmation: from then on the agent's schedule runs like a user's.
    if (enabled && !current.confirmed) change.confirmed = true;
    if (patch.auto_approve !== undefined) change.auto_approve = patch.auto_approve;
    const merged = { ...current, ...change };
    change.next_run_at = enabled ? nextOccurrence(merged, now) : null;
    const row = this.#change(id, change, origin) ?? current;
    this.#arm();
    return row;
  }

  /** Delete a schedule; returns its last state. Throws `not_found`. */
  delete(id: string, origin?: unknown): ScheduleRow {
    const row = this.#o.store.delete(id);
    if (!row) throw new ScheduleError("not_found", "No such schedule");
    this.#emit(row, { deleted: true, origin });
    this.#arm();
    return row;
  }

  /** Delete every schedule of a conversation (the conversation is being deleted). */
  deleteForConversation(conversationId: string): ScheduleRow[] {
    const rows = this.#o.store.deleteForConversation(conversationId);
    for (const row of rows) this.#emit(row, { deleted: true });
    if (rows.length > 0) this.#arm();
    return rows;
  }

  /** Delete every schedule a device made (it was revoked). */
  deleteForDevice(deviceId: string): ScheduleRow[] {
    const rows = this.#o.store.deleteForDevice(deviceId);
    for (const row of rows) this.#emit(row, { deleted: true });
    if (rows.length > 0) this.#arm();
    return rows;
  }

  /** Check cron/at (exactly one) in `timezone`; `at` must lie after `now`. */
  #when(
    cron: string | null,
    at: string | null,
    timezone: string,
    now: number,
  ): { cron: string | null; at: number | null } {
    if (cron != null && at != null)
      throw new ScheduleError("bad_request", "Give either cron or at, not both");
    if (cron != null) return { cron: checkCron(cron, timezone), at: null };
    if (at != null) return { cron: null, at: checkAt(at, now) };
    throw new ScheduleError("bad_request", "A schedule needs cron (repeating) or at (once)");
  }

  /** Arm the timer for the earliest due schedule. */
  #arm(): void {
    this.#timers.clearTimeout(this.#timer);
    this.#timer = undefined;
    if (!this.#started || this.#closed) return;
    const next = this.#o.store.nextDue();
    if (next === null) return;
    const wait = Math.min(Math.max(next - this.#o.clock.now(), 0), MAX_TIMER_MS);
    this.#timer = this.#timers.setTimeout(() => this.#tick(), wait);
  }

  /** Fire every schedule that is due, then re-arm. */
  #tick(): void {
    this.#timer = undefined;
    if (this.#closed) return;
    const now = this.#o.clock.now();
    for (const row of this.#o.store.due(now)) this.#fire(row, now);
    this.#arm();
  }

  /** Advance the row, then send its prompt; record how the run ended. */
  #fire(row: ScheduleRow, now: number): void {
    const next = nextOccurrence(row, now);
    if (this.#inflight.has(row.id)) {
      // The previous run of this schedule is still waiting or running: skip, never pile up.
      this.#change(row.id, { next_run_at: next, enabled: row.cron !== null });
      this.#o.log.warn({ schedule: row.id }, "scheduled run skipped: the previous one has not ended");
      return;
    }
    const fired = this.#change(row.id, {
      last_run_at: now,
      in_flight: true,
      next_run_at: next,
      enabled: row.cron !== null, // a one-shot schedule stays listed, disabled
    });
    if (!fired) return;
    this.#inflight.add(row.id);
    this.#o.log.info({ schedule: row.id, conversation: row.conversation_id }, "scheduled run fired");
    this.#o
      .fire(fired)
      .catch((err: unknown) => {
        this.#o.log.error({ err, schedule: row.id }, "scheduled run could not be sent");
        return "failed" as const;
      })
      .then((outcome) => {
        this.#inflight.delete(row.id);
        try {
          if (outcome === "gone") {
            const gone = this.#o.store.delete(row.id);
            if (gone) this.#emit(gone, { deleted: true });
          } else {
            this.#change(row.id, { last_status: outcome, in_flight: false });
          }
        } catch (err) {
          // The store closed first (shutdown): the row stays in flight and the next start
          // records it `failed`, as for a crash.
          if (!this.#closed)
            this.#o.log.error({ err, schedule: row.id }, "scheduled run outcome not recorded");
        }
      });
  }

  #change(id: string, change: ScheduleChange, origin?: unknown): ScheduleRow | undefined {
    const row = this.#o.store.update(id, change);
    if (row) this.#emit(row, { origin });
    return row;
  }

  #emit(row: ScheduleRow, how: { deleted?: boolean; created?: boolean; origin?: unknown } = {}): void {
    const change = { schedule: row, deleted: false, created: false, origin: undefined, ...how };
    try {
      this.#o.changed?.(change);
    } catch (err) {
      this.#o.log.error({ err, schedule: row.id }, "schedule change listener failed");
    }
  }
}
