/**
 * The scheduler against a real SQLite file: timing rules, due-time computation, firing on a
 * manual clock, the missed-occurrence rule across a restart, and every refusal's words.
 */
import { describe, expect, it } from "vitest";
import {
  checkAt,
  checkCron,
  checkName,
  checkPrompt,
  checkTimezone,
  latestOccurrence,
  nextOccurrence,
  ScheduleError,
} from "../src/schedules/rules.js";
import { type FireOutcome, Scheduler, type SchedulerOptions } from "../src/schedules/scheduler.js";
import { scheduleView } from "../src/schedules/view.js";
import type { ScheduleRow, ScheduleStore } from "../src/store/schedules.js";
import { Store } from "../src/store/store.js";
import { useTempDirs } from "./helpers.js";
import { ManualClock } from "./manual-clock.js";

const T0 = Date.parse("2026-03-27T12:00:00Z"); // a Friday; Berlin is UTC+1 until the 29th
const MIN = 60_000;
const HOUR = 60 * MIN;
const silent = { info() {}, warn() {}, error() {} };

/** The refusal `fn` throws: its code and message. */
function refusal(fn: () => unknown): { code: string; message: string } {
  try {
    fn();
  } catch (err) {
    if (err instanceof ScheduleError) return { code: err.code, message: err.message };
    throw err;
  }
  throw new Error("expected a ScheduleError");
}

describe("schedule rules", () => {
  it("accepts five-field cron only, and says which rule a bad one breaks", () => {
    expect(checkCron(" 0 8 * * 1-5 ", "UTC")).toBe("0 8 * * 1-5");
    expect(checkCron("*/15 9-17 * JAN,FEB MON", "UTC")).toBe("*/15 9-17 * JAN,FEB MON");
    expect(refusal(() => checkCron("* * * *", "UTC")).message).toBe(
      "cron must have exactly five fields: minute hour day-of-month month day-of-week",
    );
    expect(refusal(() => checkCron("0 0 8 * * *", "UTC")).message).toMatch(/exactly five fields/); // seconds
    expect(refusal(() => checkCron("@daily", "UTC")).message).toMatch(/exactly five fields/);
    expect(refusal(() => checkCron("61 * * * *", "UTC"))).toEqual({
      code: "bad_request",
      message: "cron is not a valid expression (Invalid value for minute)",
    });
    expect(refusal(() => checkCron("0 0 31 2 *", "UTC")).message).toBe(
      "cron never matches a date (e.g. 31 February)",
    );
  });

  it("accepts IANA zones only", () => {
    for (const tz of ["Europe/Berlin", "America/Argentina/Buenos_Aires", "UTC", "Etc/GMT+5"]) {
      expect(checkTimezone(tz)).toBe(tz);
    }
    for (const tz of ["Mars/Olympus", "+01:00", "CEST1", "", "Europe/../etc"]) {
      expect(refusal(() => checkTimezone(tz)).message).toBe(
        "timezone is not a known IANA time zone (e.g. Europe/Berlin, America/New_York, UTC)",
      );
    }
  });

  it("takes `at` only with an offset and only in the future: now is refused, now + 1 ms accepted", () => {
    expect(checkAt("2026-03-27T14:00:00+01:00", T0)).toBe(T0 + HOUR);
    expect(checkAt("2026-03-27T12:00:00.001Z", T0)).toBe(T0 + 1);
    expect(refusal(() => checkAt("2026-03-27T12:00:00Z", T0)).message).toBe("at is in the past");
    for (const at of ["2026-03-27T14:00:00", "2026-03-27", "tomorrow", "2026-03-27T14:00:00 +01:00"]) {
      expect(refusal(() => checkAt(at, T0)).message).toBe(
        "at must be an ISO-8601 date-time with an offset, e.g. 2026-12-24T08:00:00+01:00",
      );
    }
  });

  it("limits prompts to 64,000 code points and names to 200, and refuses blank ones", () => {
    const emoji = "😀"; // two UTF-16 units, one code point
    expect(checkPrompt(emoji.repeat(64_000))).toHaveLength(128_000);
    expect(refusal(() => checkPrompt(`${emoji.repeat(64_000)}a`)).message).toBe(
      "prompt must be at most 64000 characters",
    );
    expect(refusal(() => checkPrompt(" \n ")).message).toBe("prompt must not be blank");
    expect(checkName(` ${"n".repeat(200)} `)).toHaveLength(200);
    expect(refusal(() => checkName("n".repeat(201))).message).toBe("name must be at most 200 characters");
    expect(refusal(() => checkName("  ")).message).toBe("name must not be blank");
  });

  it("computes due times in the schedule's zone, across DST", () => {
    const weekdays8 = { cron: "0 8 * * 1-5", at: null, timezone: "Europe/Berlin" };
    // Friday 12:00Z → Monday 08:00 Berlin, which is summer time (UTC+2) after the 29th.
    expect(new Date(nextOccurrence(weekdays8, T0)!).toISOString()).toBe("2026-03-30T06:00:00.000Z");
    expect(new Date(latestOccurrence(weekdays8, T0)!).toISOString()).toBe("2026-03-27T07:00:00.000Z");
    // Inclusive at the instant itself, exclusive for the next one.
    const due = Date.parse("2026-03-27T07:00:00Z");
    expect(latestOccurrence(weekdays8, due)).toBe(due);
    expect(nextOccurrence(weekdays8, due)).toBe(Date.parse("2026-03-30T06:00:00Z"));
    // 02:30 does not exist in Berlin on the 29th: it runs at the first valid time after the gap.
    const gap = { cron: "30 2 * * *", at: null, timezone: "Europe/Berlin" };
    expect(new Date(nextOccurrence(gap, Date.parse("2026-03-28T12:00:00Z"))!).toISOString()).toBe(
      "2026-03-29T01:00:00.000Z",
    );
    const once = { cron: null, at: T0 + HOUR, timezone: "UTC" };
    expect(nextOccurrence(once, T0)).toBe(T0 + HOUR);
    expect(nextOccurrence(once, T0 + HOUR)).toBeNull();
  });
});

interface Fixture {
  clock: ManualClock;
  store: Store;
  schedules: ScheduleStore;
  scheduler: Scheduler;
  fired: ScheduleRow[];
  changes: Array<{ id: string; deleted: boolean; status: string | null; origin: unknown }>;
  /** Settle the oldest pending fire with `outcome`. */
  settle(outcome: FireOutcome): Promise<void>;
  conversation: string;
  dir: string;
  restart(options?: Partial<SchedulerOptions>): Fixture;
}

describe("the scheduler", () => {
  const tempDir = useTempDirs();

  function open(dir: string, clock: ManualClock, options: Partial<SchedulerOptions> = {}): Fixture {
    const store = new Store(dir);
    const schedules = store.schedules;
    const pending: Array<(o: FireOutcome) => void> = [];
    const fixture = {
      clock,
      store,
      schedules,
      fired: [] as ScheduleRow[],
      changes: [] as Fixture["changes"],
      conversation: "c".repeat(32),
      dir,
      async settle(outcome: FireOutcome) {
        pending.shift()?.(outcome);
        await new Promise((r) => setImmediate(r));
      },
      restart(more: Partial<SchedulerOptions> = {}) {
        fixture.scheduler.close();
        store.close();
        return open(dir, clock, { ...options, ...more });
      },
    } as Fixture;
    fixture.scheduler = new Scheduler({
      store: schedules,
      clock,
      timers: clock,
      log: silent,
      defaultTimezone: "UTC",
      conversationExists: (id) => store.getConversation(id) !== undefined,
      fire: (row) => {
        fixture.fired.push(row);
        return new Promise((resolve) => pending.push(resolve));
      },
      changed: ({ schedule, deleted, origin }) =>
        fixture.changes.push({
          id: schedule.id,
          deleted,
          status: schedule.in_flight ? "in flight" : schedule.last_status,
          origin,
        }),
      ...options,
    });
    return fixture;
  }

  function fixture(options: Partial<SchedulerOptions> = {}): Fixture {
    const f = open(tempDir(), new ManualClock(T0), options);
    f.store.createConversation({
      id: f.conversation,
      name: "c",
      session_id: null,
      source: "t",
      created_at: T0,
    });
    f.scheduler.start();
    return f;
  }

  it("creates a cron schedule with its next due time, fires it at the minute, and records the run", async () => {
    const f = fixture();
    const row = f.scheduler.create(
      {
        conversationId: f.conversation,
        prompt: "Summarise my inbox",
        cron: "0 8 * * 1-5",
        timezone: "Europe/Berlin",
      },
      "origin-1",
    );
    expect(scheduleView(row)).toEqual({
      schedule_id: row.id,
      conversation_id: f.conversation,
      name: null,
      prompt: "Summarise my inbox",
      cron: "0 8 * * 1-5",
      at: null,
      timezone: "Europe/Berlin",
      enabled: true,
      next_run_at: "2026-03-30T06:00:00.000Z",
      last_run_at: null,
      last_status: null,
      created_by: "user",
      confirmed: true,
      auto_approve: false,
    });
    expect(f.changes).toEqual([{ id: row.id, deleted: false, status: null, origin: "origin-1" }]);
    f.clock.advanceTo(Date.parse("2026-03-30T05:59:59.999Z"));
    expect(f.fired).toEqual([]);
    f.clock.advanceTo(Date.parse("2026-03-30T06:00:00Z"));
    expect(f.fired.map((r) => r.id)).toEqual([row.id]);
    expect(f.scheduler.get(row.id)).toMatchObject({
      last_run_at: Date.parse("2026-03-30T06:00:00Z"),
      in_flight: true,
      last_status: null,
      next_run_at: Date.parse("2026-03-31T06:00:00Z"),
      enabled: true,
    });
    await f.settle("completed");
    expect(f.scheduler.get(row.id).last_status).toBe("completed");
    expect(f.changes.map((c) => c.status)).toEqual([null, "in flight", "completed"]);
    // The next day, again exactly once.
    f.clock.advanceTo(Date.parse("2026-03-31T06:00:00Z"));
    expect(f.fired).toHaveLength(2);
  });

  it("keeps a one-shot schedule listed after it ran: disabled, with its last status", async () => {
    const f = fixture();
    const row = f.scheduler.create({
      conversationId: f.conversation,
      prompt: "Remind me of the dentist",
      at: "2026-03-27T13:30:00+01:00",
      name: "Dentist",
    });
    expect(scheduleView(row)).toMatchObject({
      at: "2026-03-27T12:30:00.000Z",
      cron: null,
      timezone: "UTC",
      next_run_at: "2026-03-27T12:30:00.000Z",
    });
    f.clock.advance(30 * MIN);
    expect(f.fired).toHaveLength(1);
    await f.settle("failed");
    expect(f.scheduler.list(f.conversation)).toEqual([
      expect.objectContaining({ id: row.id, enabled: false, next_run_at: null, last_status: "failed" }),
    ]);
    f.clock.advance(24 * HOUR);
    expect(f.fired).toHaveLength(1);
    expect(f.clock.pending).toBe(0); // nothing left to wake up for
  });

  it("refuses bad requests with the rule they break", () => {
    const f = fixture();
    const c = f.conversation;
    expect(refusal(() => f.scheduler.create({ conversationId: c, prompt: "p" }))).toEqual({
      code: "bad_request",
      message: "A schedule needs cron (repeating) or at (once)",
    });
    expect(
      refusal(() =>
        f.scheduler.create({ conversationId: c, prompt: "p", cron: "* * * * *", at: "2027-01-01T00:00:00Z" }),
      ).message,
    ).toBe("Give either cron or at, not both");
    expect(
      refusal(() => f.scheduler.create({ conversationId: c, prompt: "p", at: "2026-03-27T11:59:00Z" }))
        .message,
    ).toBe("at is in the past");
    expect(
      refusal(() =>
        f.scheduler.create({ conversationId: c, prompt: "p", cron: "* * * * *", timezone: "Nowhere/Land" }),
      ).message,
    ).toMatch(/^timezone is not a known IANA time zone/);
    expect(
      refusal(() => f.scheduler.create({ conversationId: "d".repeat(32), prompt: "p", cron: "* * * * *" })),
    ).toEqual({ code: "conversation_not_found", message: "Conversation not found" });
    expect(refusal(() => f.scheduler.update("e".repeat(32), { name: "x" }))).toEqual({
      code: "not_found",
      message: "No such schedule",
    });
    expect(refusal(() => f.scheduler.delete("e".repeat(32))).code).toBe("not_found");
    expect(f.scheduler.list()).toEqual([]);
    expect(f.changes).toEqual([]);
  });

  it("holds at most 100 schedules: the 100th is accepted, the 101st refused", () => {
    const f = fixture();
    for (let i = 0; i < 100; i++)
      f.scheduler.create({ conversationId: f.conversation, prompt: `p${i}`, cron: "0 * * * *" });
    expect(
      refusal(() =>
        f.scheduler.create({ conversationId: f.conversation, prompt: "one more", cron: "0 * * * *" }),
      ),
    ).toEqual({ code: "bad_request", message: "A server holds at most 100 schedules" });
    expect(f.schedules.count()).toBe(100);
    // Deleting one frees its slot.
    f.scheduler.delete(f.scheduler.list()[0]!.id);
    expect(
      f.scheduler.create({ conversationId: f.conversation, prompt: "now fits", cron: "0 * * * *" }),
    ).toBeDefined();
  });

  it("after downtime runs a missed occurrence once when it is younger than the grace, never as a burst", async () => {
    let f = fixture();
    const every = f.scheduler.create({ conversationId: f.conversation, prompt: "tick", cron: "* * * * *" });
    const daily = f.scheduler.create({ conversationId: f.conversation, prompt: "daily", cron: "0 9 * * *" });
    // Down from 12:00 to 13:30: 90 minutely occurrences missed (the latest 30 s old), and the
    // daily one has not been due.
    f.scheduler.close();
    f.clock.t = T0 + 90 * MIN + 30_000;
    f = f.restart();
    f.scheduler.start();
    expect(f.fired.map((r) => r.id)).toEqual([every.id]);
    expect(f.scheduler.get(every.id)).toMatchObject({
      last_run_at: f.clock.t,
      next_run_at: T0 + 91 * MIN,
      in_flight: true,
    });
    expect(f.scheduler.get(daily.id).last_run_at).toBeNull();
  });

  it("after downtime longer than the grace skips the occurrence and waits for the next", () => {
    let f = fixture({ missedGraceMs: HOUR });
    const daily = f.scheduler.create({ conversationId: f.conversation, prompt: "daily", cron: "0 13 * * *" });
    const once = f.scheduler.create({
      conversationId: f.conversation,
      prompt: "once",
      at: "2026-03-27T13:00:00Z",
    });
    // Down until 14:00 (both due at 13:00, exactly one hour ago: not less than the grace).
    f.scheduler.close();
    f.clock.t = T0 + 2 * HOUR;
    f = f.restart();
    f.scheduler.start();
    expect(f.fired).toEqual([]);
    expect(f.scheduler.get(daily.id)).toMatchObject({
      last_status: null,
      last_run_at: null,
      enabled: true,
      next_run_at: Date.parse("2026-03-28T13:00:00Z"),
    });
    // A one-shot schedule whose time passed unseen stays listed, disabled, never run.
    expect(f.scheduler.get(once.id)).toMatchObject({
      last_status: null,
      last_run_at: null,
      enabled: false,
      next_run_at: null,
    });
  });

  it("one millisecond younger than the grace still runs", () => {
    let f = fixture({ missedGraceMs: HOUR });
    const once = f.scheduler.create({
      conversationId: f.conversation,
      prompt: "once",
      at: "2026-03-27T13:00:00Z",
    });
    f.scheduler.close();
    f.clock.t = Date.parse("2026-03-27T14:00:00Z") - 1;
    f = f.restart();
    f.scheduler.start();
    expect(f.fired.map((r) => r.id)).toEqual([once.id]);
  });

  it("records a run interrupted by a restart as failed", () => {
    let f = fixture();
    const row = f.scheduler.create({ conversationId: f.conversation, prompt: "p", cron: "0 * * * *" });
    f.clock.advance(HOUR);
    expect(f.scheduler.get(row.id).in_flight).toBe(true);
    f = f.restart();
    f.scheduler.start();
    expect(f.scheduler.get(row.id)).toMatchObject({ in_flight: false, last_status: "failed" });
    expect(f.changes).toEqual([{ id: row.id, deleted: false, status: "failed", origin: undefined }]);
  });

  it("skips an occurrence while the previous run of the same schedule has not ended", async () => {
    const f = fixture();
    const row = f.scheduler.create({ conversationId: f.conversation, prompt: "slow", cron: "* * * * *" });
    f.clock.advance(MIN);
    f.clock.advance(MIN);
    f.clock.advance(MIN);
    expect(f.fired).toHaveLength(1);
    expect(f.scheduler.get(row.id)).toMatchObject({ last_run_at: T0 + MIN, next_run_at: T0 + 4 * MIN });
    await f.settle("completed");
    f.clock.advance(MIN);
    expect(f.fired).toHaveLength(2);
  });

  it("deletes a schedule whose conversation is gone when it fires", async () => {
    const f = fixture();
    const row = f.scheduler.create({
      conversationId: f.conversation,
      prompt: "p",
      at: "2026-03-27T12:01:00Z",
    });
    f.clock.advance(MIN);
    await f.settle("gone");
    expect(f.scheduler.list()).toEqual([]);
    expect(f.changes.at(-1)).toMatchObject({ id: row.id, deleted: true });
  });

  it("deletes a conversation's schedules with it, and no others", () => {
    const f = fixture();
    const other = "f".repeat(32);
    f.store.createConversation({ id: other, name: "o", session_id: null, source: "t", created_at: T0 });
    const mine = f.scheduler.create({ conversationId: f.conversation, prompt: "p", cron: "0 * * * *" });
    const theirs = f.scheduler.create({ conversationId: other, prompt: "p", cron: "0 * * * *" });
    expect(f.scheduler.deleteForConversation(f.conversation).map((r) => r.id)).toEqual([mine.id]);
    expect(f.scheduler.list().map((r) => r.id)).toEqual([theirs.id]);
    expect(f.changes.at(-1)).toMatchObject({ id: mine.id, deleted: true });
    f.clock.advance(HOUR);
    expect(f.fired.map((r) => r.id)).toEqual([theirs.id]);
  });

  it("updates: a new cron re-arms, disabling stops it, a past `at` cannot be re-enabled, cron ↔ at", async () => {
    const f = fixture();
    const row = f.scheduler.create({
      conversationId: f.conversation,
      prompt: "p",
      cron: "0 13 * * *",
      name: "N",
    });
    expect(f.scheduler.update(row.id, { cron: "30 12 * * *" }, "o").next_run_at).toBe(T0 + 30 * MIN);
    expect(f.changes.at(-1)).toMatchObject({ id: row.id, origin: "o" });
    const off = f.scheduler.update(row.id, { enabled: false });
    expect(off).toMatchObject({ enabled: false, next_run_at: null });
    f.clock.advance(HOUR);
    expect(f.fired).toEqual([]);
    // Giving `at` makes it the trigger and clears cron.
    const once = f.scheduler.update(row.id, { at: "2026-03-27T14:00:00Z", enabled: true });
    expect(once).toMatchObject({ cron: null, at: T0 + 2 * HOUR, enabled: true, next_run_at: T0 + 2 * HOUR });
    f.clock.advance(HOUR);
    await f.settle("completed");
    expect(f.scheduler.get(row.id)).toMatchObject({ enabled: false, last_status: "completed" });
    expect(refusal(() => f.scheduler.update(row.id, { enabled: true })).message).toBe("at is in the past");
    // Renaming a spent one-shot is fine, and so is removing its name or making it repeat again.
    expect(f.scheduler.update(row.id, { name: "Renamed" }).name).toBe("Renamed");
    expect(f.scheduler.update(row.id, { name: null }).name).toBeNull();
    expect(f.scheduler.update(row.id, { cron: "0 * * * *", enabled: true })).toMatchObject({
      cron: "0 * * * *",
      at: null,
      next_run_at: T0 + 3 * HOUR,
    });
    expect(
      refusal(() => f.scheduler.update(row.id, { cron: "0 * * * *", at: "2027-01-01T00:00:00Z" })).message,
    ).toBe("Give either cron or at, not both");
    expect(refusal(() => f.scheduler.update(row.id, { timezone: "Atlantis/Capital" })).message).toMatch(
      /^timezone is not a known IANA time zone/,
    );
  });

  it("survives a restart: schedules are read back from SQLite and fire on time", () => {
    let f = fixture();
    const row = f.scheduler.create({ conversationId: f.conversation, prompt: "p", cron: "15 12 * * *" });
    f = f.restart();
    f.scheduler.start();
    expect(scheduleView(f.scheduler.get(row.id))).toEqual(scheduleView(row));
    f.clock.advance(15 * MIN);
    expect(f.fired.map((r) => r.id)).toEqual([row.id]);
  });

  it("wakes exactly on time for a schedule hours away (the timer is re-armed each minute)", () => {
    const f = fixture();
    f.scheduler.create({ conversationId: f.conversation, prompt: "p", at: "2026-03-27T15:07:00Z" });
    f.clock.advance(4 * HOUR);
    expect(f.fired.map((r) => r.last_run_at)).toEqual([Date.parse("2026-03-27T15:07:00Z")]);
  });

  it("fires with the real clock and timers", async () => {
    const store = new Store(tempDir());
    store.createConversation({
      id: "a".repeat(32),
      name: "c",
      session_id: null,
      source: "t",
      created_at: Date.now(),
    });
    let resolveFired!: (row: ScheduleRow) => void;
    const fired = new Promise<ScheduleRow>((r) => (resolveFired = r));
    const scheduler = new Scheduler({
      store: store.schedules,
      clock: { now: () => Date.now() },
      log: silent,
      conversationExists: () => true,
      fire: async (row) => {
        resolveFired(row);
        return "completed";
      },
    });
    scheduler.start();
    const at = new Date(Date.now() + 50).toISOString();
    const row = scheduler.create({ conversationId: "a".repeat(32), prompt: "p", at });
    expect((await fired).id).toBe(row.id);
    scheduler.close();
    store.close();
  });
});
