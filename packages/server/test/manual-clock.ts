/**
 * A clock and timer functions that move only when a test says so: the scheduler's time without
 * waiting for the minute. `advance` fires due timers in time order, each at its own instant.
 */
import type { Timers } from "../src/schedules/scheduler.js";
import type { Clock } from "../src/util/time.js";

export class ManualClock implements Clock, Timers {
  #id = 0;
  readonly #timers = new Map<number, { at: number; fn: () => void }>();

  constructor(public t: number) {}

  now(): number {
    return this.t;
  }

  setTimeout(fn: () => void, ms: number): number {
    const id = ++this.#id;
    this.#timers.set(id, { at: this.t + Math.max(0, ms), fn });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.#timers.delete(handle as number);
  }

  /** Timers pending now. */
  get pending(): number {
    return this.#timers.size;
  }

  /** Move to `to` (epoch ms), firing every timer due by then at its own time. */
  advanceTo(to: number): void {
    for (;;) {
      let first: [number, { at: number; fn: () => void }] | undefined;
      for (const entry of this.#timers) if (!first || entry[1].at < first[1].at) first = entry;
      if (!first || first[1].at > to) break;
      this.#timers.delete(first[0]);
      this.t = Math.max(this.t, first[1].at);
      first[1].fn();
    }
    this.t = Math.max(this.t, to);
  }

  advance(ms: number): void {
    this.advanceTo(this.t + ms);
  }
}
