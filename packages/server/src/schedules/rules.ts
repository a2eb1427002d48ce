/**
 * The rules of a schedule's timing: a standard five-field cron expression in an IANA time zone,
 * or one `at` time (ISO-8601 with an offset). Cron arithmetic, time zones and DST are croner's;
 * what is a valid schedule, and the words of each refusal, are ours.
 */
import { codePointLength } from "@pheby/protocol";
import { Cron } from "croner";
import { MAX_NAME_CHARS, MAX_PROMPT_CHARS } from "./limits.js";

export { DEFAULT_MISSED_GRACE_MS, MAX_NAME_CHARS, MAX_PROMPT_CHARS, MAX_SCHEDULES } from "./limits.js";

/** The protocol error a refused schedule request maps to. */
export type ScheduleErrorCode = "bad_request" | "not_found" | "conversation_not_found";

/**
 * A schedule request that breaks a rule. `message` says which rule and never echoes the
 * offending value (it can be user text), like the protocol's own decode errors.
 */
export class ScheduleError extends Error {
  override readonly name = "ScheduleError";
  constructor(
    readonly code: ScheduleErrorCode,
    message: string,
  ) {
    super(message);
  }
}

const bad = (message: string) => new ScheduleError("bad_request", message);

/** The server's own time zone (the default of a schedule without one). */
export function serverTimezone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
}

/** IANA names only: `Area/Location`, `UTC`, `Etc/GMT+5`; not offsets, not abbreviations. */
const IANA_NAME = /^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/;

/**
 * Check an IANA time zone name (`Europe/Berlin`, `UTC`, `Etc/GMT+5`; not an offset such as `+02:00`)
 * that this Node.js knows; returns it unchanged. The rule `schedules.create`/`schedules.update` and
 * the server's default schedule time zone are held to, exported so configuration can refuse exactly
 * what the server would.
 *
 * @throws Error when the name is not such a time zone; the message does not echo the value.
 */
export function checkTimezone(timezone: string): string {
  if (IANA_NAME.test(timezone)) {
    try {
      new Intl.DateTimeFormat("en-US", { timeZone: timezone });
      return timezone;
    } catch {
      // falls through to the refusal
    }
  }
  throw bad("timezone is not a known IANA time zone (e.g. Europe/Berlin, America/New_York, UTC)");
}

/**
 * Check a cron expression: exactly five fields (minute hour day-of-month month day-of-week),
 * croner's syntax within them (ranges, steps, lists, names, `L`, `W`, `#`), and at least one
 * future occurrence. Day-of-month and day-of-week combine with OR when both are restricted, as
 * in Vixie cron.
 */
export function checkCron(cron: string, timezone: string): string {
  const expression = cron.trim();
  if (expression.split(/\s+/).length !== 5) {
    throw bad("cron must have exactly five fields: minute hour day-of-month month day-of-week");
  }
  let job: Cron;
  try {
    job = new Cron(expression, { timezone, paused: true });
  } catch (err) {
    throw bad(`cron is not a valid expression (${cronRule((err as Error).message)})`);
  }
  if (job.nextRun() === null) throw bad("cron never matches a date (e.g. 31 February)");
  return expression;
}

/**
 * The rule of a croner message without the value it quotes ("Invalid value for minute: 61" →
 * "Invalid value for minute"): errors name the rule, never echo input.
 */
function cronRule(message: string): string {
  const rule = message
    .replace(/^CronPattern: /, "")
    .split(/:\s|\s?\(?'/)[0]!
    .replace(/\.\s*Value$/, "")
    .trim();
  return rule || "syntax error";
}

/** ISO-8601 date-time with an explicit offset (`Z` or `±HH:MM`), seconds and fraction optional. */
const ISO_WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/i;

/** Parse an `at` time; it must carry an offset and lie after `now`. Returns epoch ms. */
export function checkAt(at: string, now: number): number {
  const ms = ISO_WITH_OFFSET.test(at) ? Date.parse(at) : Number.NaN;
  if (Number.isNaN(ms)) {
    throw bad("at must be an ISO-8601 date-time with an offset, e.g. 2026-12-24T08:00:00+01:00");
  }
  if (ms <= now) throw bad("at is in the past");
  return ms;
}

/** When a schedule is due next after `after` (exclusive), or null when it never is. */
export function nextOccurrence(
  when: { cron: string | null; at: number | null; timezone: string },
  after: number,
): number | null {
  if (when.cron !== null) {
    const next = new Cron(when.cron, { timezone: when.timezone, paused: true }).nextRun(new Date(after));
    return next ? next.getTime() : null;
  }
  return when.at !== null && when.at > after ? when.at : null;
}

/** The latest occurrence at or before `at` (inclusive), or null. Used for the missed-run rule. */
export function latestOccurrence(
  when: { cron: string | null; at: number | null; timezone: string },
  at: number,
): number | null {
  if (when.cron !== null) {
    // previousRuns is exclusive of its reference: step one millisecond past `at`.
    const [prev] = new Cron(when.cron, { timezone: when.timezone, paused: true }).previousRuns(
      1,
      new Date(at + 1),
    );
    return prev ? prev.getTime() : null;
  }
  return when.at !== null && when.at <= at ? when.at : null;
}

/** Code points, as every protocol length limit counts them. */
/** Check a prompt: non-blank, at most {@link MAX_PROMPT_CHARS} code points. */
export function checkPrompt(prompt: string): string {
  if (prompt.trim() === "") throw bad("prompt must not be blank");
  if (codePointLength(prompt) > MAX_PROMPT_CHARS) {
    throw bad(`prompt must be at most ${MAX_PROMPT_CHARS} characters`);
  }
  return prompt;
}

/** Check a name: non-blank, at most {@link MAX_NAME_CHARS} code points. Returns it trimmed. */
export function checkName(name: string): string {
  const trimmed = name.trim();
  if (trimmed === "") throw bad("name must not be blank");
  if (codePointLength(trimmed) > MAX_NAME_CHARS)
    throw bad(`name must be at most ${MAX_NAME_CHARS} characters`);
  return trimmed;
}
