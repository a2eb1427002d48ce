import { CHECKS } from "./checks/index.js";
import { CheckContext } from "./context.js";
import { CheckFailure, CheckSkip } from "./failure.js";
import type { Check, CheckResult, ConformanceOptions, ConformanceReport } from "./types.js";

/** True when `id` matches a pattern where `*` stands for any run of characters. */
export function matchesPattern(id: string, pattern: string): boolean {
  const regex = new RegExp(`^${pattern.split("*").map(escapeRegExp).join(".*")}$`);
  return regex.test(id);
}

function escapeRegExp(s: string): string {
  return s.replace(/[.+?^${}()|[\]\\]/g, "\\$&");
}

/** The checks `options` selects with `only` and `skip`, in run order. */
export function selectChecks(options: Pick<ConformanceOptions, "only" | "skip">): Check[] {
  return CHECKS.filter(
    (c) =>
      (!options.only?.length || options.only.some((p) => matchesPattern(c.id, p))) &&
      !options.skip?.some((p) => matchesPattern(c.id, p)),
  );
}

/** Why `check` cannot run with these options, or undefined. */
function unmetNeed(check: Check, options: ConformanceOptions): string | undefined {
  const needs = check.needs ?? {};
  if (needs.simulator && options.simulator === false)
    return "needs the simulator's /sim scenarios (--no-simulator)";
  if (needs.authFailures && options.authFailures === false)
    return "sends failing hellos, which are turned off (authFailures: false)";
  if (needs.authTimeout && options.authTimeoutMs === undefined)
    return "needs the server's auth timeout (pass --auth-timeout-ms and start the server with a short one)";
  return undefined;
}

/** Frames counted across a whole run; the runner adds each check's tally. */
export interface FrameTally {
  received: number;
  invalid: number;
}

/** Run one check and describe its outcome. Never throws. */
export async function runCheck(
  check: Check,
  options: ConformanceOptions,
  tally?: FrameTally,
): Promise<CheckResult> {
  const base = { id: check.id, section: check.section, title: check.title };
  const unmet = unmetNeed(check, options);
  if (unmet) return { ...base, status: "skip", reason: unmet, durationMs: 0 };
  const started = performance.now();
  const ctx = new CheckContext(options);
  let result: CheckResult;
  try {
    await check.run(ctx);
    result = { ...base, status: "pass", durationMs: 0 };
  } catch (err) {
    if (err instanceof CheckSkip) result = { ...base, status: "skip", reason: err.message, durationMs: 0 };
    else if (err instanceof CheckFailure)
      result = {
        ...base,
        status: "fail",
        reason: err.message,
        ...(err.frame === undefined ? {} : { frame: err.frame }),
        durationMs: 0,
      };
    else
      result = {
        ...base,
        status: "fail",
        reason: `unexpected error: ${(err as Error)?.message ?? String(err)}`,
        durationMs: 0,
      };
  } finally {
    ctx.dispose();
  }
  // An invalid frame is the root cause of whatever else went wrong (a wait that timed out, ...).
  const invalid = ctx.invalid[0];
  if (invalid && result.status !== "skip")
    result = {
      ...base,
      status: "fail",
      reason: `the server sent a frame that @pheby/protocol rejects (${invalid.error})`,
      frame: invalid.raw,
      durationMs: 0,
    };
  if (tally) {
    tally.received += ctx.framesReceived;
    tally.invalid += ctx.invalid.length;
  }
  result.durationMs = Math.round(performance.now() - started);
  return result;
}

/**
 * Run the Pheby Protocol v1 conformance suite against a live server and
 * return the report. Every frame the server sends is validated against
 * `@pheby/protocol`; a check that receives an invalid frame fails, quoting it.
 *
 * ```ts
 * const report = await runConformance({ url: "ws://127.0.0.1:8620/ws", secret });
 * if (!report.ok) console.log(formatReport(report));
 * ```
 */
export async function runConformance(options: ConformanceOptions): Promise<ConformanceReport> {
  const startedAt = new Date();
  const started = performance.now();
  const tally: FrameTally = { received: 0, invalid: 0 };
  const results: CheckResult[] = [];
  for (const check of selectChecks(options)) {
    const result = await runCheck(check, options, tally);
    results.push(result);
    options.onResult?.(result);
  }
  const count = (s: CheckResult["status"]) => results.filter((r) => r.status === s).length;
  const summary = {
    total: results.length,
    passed: count("pass"),
    failed: count("fail"),
    skipped: count("skip"),
  };
  return {
    url: options.url,
    startedAt: startedAt.toISOString(),
    durationMs: Math.round(performance.now() - started),
    ok: summary.failed === 0,
    summary,
    frames: tally,
    results,
  };
}
