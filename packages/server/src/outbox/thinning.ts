/**
 * How often a v1 connection gets a `message.delta` of a long answer. A v1 delta carries the whole
 * draft; permessage-deflate makes it cost about its new text only while the previous delta lies
 * within deflate's 32 KiB window. Past that, every copy costs the whole draft again, so the
 * Fanout spaces a message's v1 copies out in proportion to their size (docs/performance.md,
 * "Thinning v1 deltas"). Append connections are never thinned: their deltas stay small.
 */
import type { Clock, Timers } from "../util/time.js";
import type { OutboxEvent, Peer } from "./outbox.js";

/** A serialised v1 delta larger than this (UTF-8 bytes) no longer finds its predecessor in deflate's window. */
export const THIN_ABOVE_BYTES = 32 * 1024;
/** Never more than this between two v1 deltas of a message still streaming. */
export const THIN_MAX_INTERVAL_MS = 1_500;
/** Uncompressed frame bytes per second a thinned v1 copy of a message may cost (about a third of it compressed). */
export const THIN_BYTES_PER_SECOND = 48 * 1024;

/**
 * The shortest gap, in ms, between two v1 copies of a delta whose v1 frame has `frameBytes`: 0
 * while the frame fits deflate's window, then the frame's size at {@link THIN_BYTES_PER_SECOND}
 * (667 ms at 32 KiB, 1 s at 48 KiB, 1.33 s at 64 KiB), at most {@link THIN_MAX_INTERVAL_MS}. A copy then costs its
 * whole text, so a gap that grows with that text holds the connection's rate constant.
 */
export function thinInterval(frameBytes: number): number {
  if (frameBytes <= THIN_ABOVE_BYTES) return 0;
  return Math.min(THIN_MAX_INTERVAL_MS, (frameBytes * 1_000) / THIN_BYTES_PER_SECOND);
}

/** What thinning needs: the time, and timers for the trailing copy (a test's manual clock, or the system's). */
export interface ThinningClock {
  clock: Clock;
  timers: Timers;
}

/**
 * The v1 copies of one message being streamed: when the last went out, and the latest delta held
 * back since then, which a timer sends once its gap has passed even if no newer delta comes.
 * `send` delivers a held event to the v1 connections that do not hold it yet.
 */
export class V1Copies {
  #sentAt = Number.NEGATIVE_INFINITY;
  #held: OutboxEvent | undefined;
  #timer: unknown;
  /** Connections that got the held delta already (a `resume` replay): not sent it twice. */
  readonly holders = new Set<Peer>();

  constructor(
    private readonly time: ThinningClock,
    private readonly send: (held: OutboxEvent) => void,
  ) {}

  /** The held delta, if any. */
  get held(): OutboxEvent | undefined {
    return this.#held;
  }

  /**
   * A new delta of this message with a v1 frame of `frameBytes`: true when the v1 connections get
   * it now, false when it is held (replacing any held before) until its gap has passed.
   */
  offer(event: OutboxEvent, frameBytes: number): boolean {
    const now = this.time.clock.now();
    const due = this.#sentAt + thinInterval(frameBytes);
    this.#cancel();
    if (now >= due) {
      this.#sent(now);
      return true;
    }
    this.#held = event;
    this.holders.clear();
    this.#timer = this.time.timers.setTimeout(() => {
      this.#timer = undefined;
      this.flush();
    }, due - now);
    return false;
  }

  /** Send the held delta now (another event of the conversation follows it, or its gap has passed). */
  flush(): void {
    const held = this.#held;
    if (held === undefined) return;
    this.#cancel();
    // Sent before it is forgotten: `send` skips the holders.
    this.send(held);
    this.#sent(this.time.clock.now());
  }

  /** Forget the held delta (its `message.complete` supersedes it). */
  drop(): void {
    this.#cancel();
    this.#held = undefined;
    this.holders.clear();
  }

  #sent(now: number): void {
    this.#sentAt = now;
    this.#held = undefined;
    this.holders.clear();
  }

  #cancel(): void {
    if (this.#timer !== undefined) this.time.timers.clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
