/** Default upper bound of the reconnect delay, in ms. */
export const DEFAULT_MAX_DELAY_MS = 30_000;

/** Reconnect backoff settings. */
export interface BackoffOptions {
  /** First delay, in ms (default 500). */
  initialDelayMs?: number;
  /** Upper bound, in ms (default 30,000). */
  maxDelayMs?: number;
  /** Growth factor per attempt (default 2). */
  factor?: number;
  /**
   * The wait after a lockout (close 4429) whose reason names no time, in ms (default: `maxDelayMs`);
   * the Kotlin client's `ReconnectPolicy.lockedOutDelay`.
   */
  lockedOutDelayMs?: number;
}

/**
 * Exponential backoff with "full jitter": a uniform delay in [0, min(max, initial·factor^attempt)],
 * so many clients reconnecting after a server restart do not arrive in lockstep.
 */
export function backoffDelay(
  attempt: number,
  options: BackoffOptions = {},
  random: () => number = Math.random,
) {
  const { initialDelayMs = 500, maxDelayMs = DEFAULT_MAX_DELAY_MS, factor = 2 } = options;
  const ceiling = Math.min(maxDelayMs, initialDelayMs * factor ** attempt);
  return Math.round(random() * ceiling);
}
