import type { CheckContext } from "./context.js";

/** Options of {@link runConformance}. */
export interface ConformanceOptions {
  /** WebSocket URL of the server (`ws://host:port/ws`); an `http(s)://host:port` base is accepted too. */
  url: string;
  /** The server's shared secret. */
  secret: string;
  /**
   * The server offers the simulator's documented `/sim …` scenarios (default true).
   * When false, checks that need them are skipped with a reason.
   */
  simulator?: boolean;
  /**
   * The server's auth timeout in ms. When given, the auth-timeout check waits for it
   * (start a test server with a short one); when absent that check is skipped, since
   * the spec's 10 s would slow every run.
   */
  authTimeoutMs?: number;
  /**
   * Run the checks that send failing hellos (default true). They use at most 4 per run,
   * under the spec's lockout of 5 failures per 60 s; a second run within a minute of the
   * first would lock this address out, so CI running the suite twice can turn them off.
   */
  authFailures?: boolean;
  /** Only run checks whose id matches one of these patterns (`*` is a wildcard, e.g. `runs.*`). */
  only?: string[];
  /** Skip checks whose id matches one of these patterns. */
  skip?: string[];
  /** How long to wait for any one expected frame, in ms (default 10,000). */
  timeoutMs?: number;
  /** Called after each check, e.g. to print progress. */
  onResult?: (result: CheckResult) => void;
}

/** Outcome of one check. */
export type CheckStatus = "pass" | "fail" | "skip";

/** A check's result, as it appears in the report. */
export interface CheckResult {
  id: string;
  /** The section of the Pheby v1 spec it checks. */
  section: string;
  title: string;
  status: CheckStatus;
  /** Why it failed or was skipped. */
  reason?: string;
  /** The offending server frame (or raw text), on failure. */
  frame?: unknown;
  durationMs: number;
}

/** The whole run. */
export interface ConformanceReport {
  /** The URL tested (never the secret). */
  url: string;
  startedAt: string;
  durationMs: number;
  /** True when no check failed. */
  ok: boolean;
  summary: { total: number; passed: number; failed: number; skipped: number };
  /** Every server frame received was validated against `@pheby/protocol`. */
  frames: { received: number; invalid: number };
  results: CheckResult[];
}

/** What a check needs from the server; unmet needs make it skip with a reason. */
export interface CheckNeeds {
  /** The simulator's `/sim …` scenarios. */
  simulator?: boolean;
  /** A known auth timeout ({@link ConformanceOptions.authTimeoutMs}). */
  authTimeout?: boolean;
  /** Sends failing hellos ({@link ConformanceOptions.authFailures}). */
  authFailures?: boolean;
}

/** One black-box check. */
export interface Check {
  /** Stable id, `area.name`. */
  id: string;
  /** The spec section it checks. */
  section: string;
  title: string;
  needs?: CheckNeeds;
  run(ctx: CheckContext): Promise<void>;
}
