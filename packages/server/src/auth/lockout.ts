import type { Clock } from "../util/time.js";

/** Lockout settings (see {@link PhebyServerOptions.lockout}). */
export interface LockoutSettings {
  maxFailures: number;
  windowMs: number;
  durationMs: number;
}

/** Bound on tracked addresses so a flood of sources cannot grow memory without limit. */
const MAX_TRACKED = 10_000;

/**
 * Failed-hello lockout per source address: `maxFailures` failures within
 * `windowMs` lock the address for `durationMs`. In memory only: a restart
 * forgets lockouts, which is acceptable for a single-user server.
 */
export class Lockout {
  readonly #failures = new Map<string, number[]>();
  readonly #lockedUntil = new Map<string, number>();

  constructor(
    private readonly settings: LockoutSettings,
    private readonly clock: Clock,
  ) {}

  /** True while `addr` is locked out. */
  isLocked(addr: string): boolean {
    const until = this.#lockedUntil.get(addr);
    if (until === undefined) return false;
    if (this.clock.now() < until) return true;
    this.#lockedUntil.delete(addr);
    return false;
  }

  /** Record a failed hello; returns true when this failure locked the address. */
  fail(addr: string): boolean {
    const now = this.clock.now();
    const recent = (this.#failures.get(addr) ?? []).filter((t) => now - t < this.settings.windowMs);
    recent.push(now);
    if (recent.length >= this.settings.maxFailures) {
      this.#failures.delete(addr);
      this.#lockedUntil.set(addr, now + this.settings.durationMs);
      // Expired locks are otherwise removed only when their address comes back; live ones are kept
      // whatever their number, or flooding from many addresses would unlock the earlier ones.
      if (this.#lockedUntil.size > MAX_TRACKED) {
        for (const [a, until] of this.#lockedUntil) if (until <= now) this.#lockedUntil.delete(a);
      }
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
  succeed(addr: string): void {
    this.#failures.delete(addr);
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
