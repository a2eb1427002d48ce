/** The injectable clock of the server (milliseconds since the epoch). */
export interface Clock {
  now(): number;
}

/** The wall clock. */
export const systemClock: Clock = { now: () => Date.now() };

/** ISO-8601 UTC timestamp of a clock reading, as every `ts` field carries it. */
export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** Timer functions (the global ones by default; tests pass a manual clock's). */
export interface Timers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** The global timers, unref'd: a pending one never keeps the process alive. */
export const systemTimers: Timers = {
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms);
    t.unref();
    return t;
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** Whether a clock also schedules (a test's manual clock): then it drives the server's timers. */
export function isTimers(clock: Clock): clock is Clock & Timers {
  const c = clock as Partial<Timers>;
  return typeof c.setTimeout === "function" && typeof c.clearTimeout === "function";
}
