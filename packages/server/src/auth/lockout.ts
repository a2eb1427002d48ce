import type { Clock } from "../util/time.js";
import { lockoutKey } from "./address.js";

/** Lockout settings (see {@link PhebyServerOptions.lockout}). */
export interface LockoutSettings {
  maxFailures: number;
  windowMs: number;
  durationMs: number;
}

/** Bound on addresses with failures on record, so a flood of sources cannot grow memory without limit. */
const MAX_TRACKED = 10_000;

/**
 * Hard bound on live locks. Past it the lock that expires soonest is released: an attacker must lock
 * this many fresh addresses (five failures each) to win five more guesses on one of them, which is
 * nothing against a 256-bit secret, while memory stays bounded (about 100 bytes a lock).
 */
const MAX_LOCKED = 100_000;

/**
 * Failed-hello lockout per source address: `maxFailures` failures within
 * `windowMs` lock the address for `durationMs`. An IPv6 source is keyed by its
 * /64 ({@link lockoutKey}). In memory only: a restart forgets lockouts, which
 * is acceptable for a single-user server.
 */
export class Lockout {
  readonly #failures = new Map<string, number[]>();
  readonly #lockedUntil = new Map<string, number>();

  constructor(
    private readonly settings: LockoutSettings,
    private readonly clock: Clock,
  ) {}

  /** True while `addr` is locked out. */
  isLocked(source: string): boolean {
    return this.remainingMs(source) > 0;
  }

  /** How long `addr` stays locked out, in ms; 0 when it is not. */
  remainingMs(source: string): number {
    const addr = lockoutKey(source);
    const until = this.#lockedUntil.get(addr);
    if (until === undefined) return 0;
    const left = until - this.clock.now();
    if (left > 0) return left;
    this.#lockedUntil.delete(addr);
    return 0;
  }

  /** Record a failed hello; returns true when this failure locked the address. */
  fail(source: string): boolean {
    const addr = lockoutKey(source);
    const now = this.clock.now();
    const recent = (this.#failures.get(addr) ?? []).filter((t) => now - t < this.settings.windowMs);
    recent.push(now);
    if (recent.length >= this.settings.maxFailures) {
      this.#failures.delete(addr);
      this.#lockedUntil.delete(addr); // re-insert at the end, so insertion order is expiry order
      this.#lockedUntil.set(addr, now + this.settings.durationMs);
      this.#pruneLocks(now);
      return true;
    }
    this.#failures.set(addr, recent);
    if (this.#failures.size > MAX_TRACKED) this.#prune(now);
    return false;
  }

  /** How many addresses have failures or a lock on record (bounded memory; for tests). */
  get tracked(): number {
    return this.#failures.size + this.#lockedUntil.size;
  }

  /** A successful hello forgets earlier failures of the address. */
  succeed(source: string): void {
    this.#failures.delete(lockoutKey(source));
  }

  /**
   * Every lock lasts `durationMs`, so the map's insertion order is expiry order: expired locks are
   * dropped from the front (amortised O(1) a call, no full scan under a flood), then, past
   * {@link MAX_LOCKED}, the ones closest to expiring.
   */
  #pruneLocks(now: number): void {
    for (const [addr, until] of this.#lockedUntil) {
      if (until > now && this.#lockedUntil.size <= MAX_LOCKED) break;
      this.#lockedUntil.delete(addr);
    }
  }

  #prune(now: number): void {
    for (const [addr, times] of this.#failures) {
      if (times.every((t) => now - t >= this.settings.windowMs)) this.#failures.delete(addr);
    }
    // Still too many: drop the oldest entries (Map iterates in insertion order).
    for (const addr of this.#failures.keys()) {
      if (this.#failures.size <= MAX_TRACKED) break;
      this.#failures.delete(addr);
    }
  }
}

/**
 * How a refusal names the wait of a lockout, in whole seconds rounded up, so a client knows when to
 * come back (docs/protocol.md, close codes): the `rate_limited` message and the 4429 close reason end
 * with it, and clients read it with a `retry after (\d+) s` pattern.
 */
export function retryAfter(remainingMs: number): string {
  return `retry after ${retryAfterSeconds(remainingMs)} s`;
}

/** {@link retryAfter}'s number: whole seconds, rounded up, at least 1. */
export function retryAfterSeconds(remainingMs: number): number {
  return Math.max(1, Math.ceil(remainingMs / 1000));
}
