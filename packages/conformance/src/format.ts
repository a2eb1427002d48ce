import type { CheckResult, ConformanceReport } from "./types.js";

const MARK = { pass: "PASS", fail: "FAIL", skip: "SKIP" } as const;

/** One check as readable lines: status, id, title, section, and on failure the reason and frame. */
export function formatResult(result: CheckResult): string {
  const lines = [`${MARK[result.status]}  ${result.id}  ${result.title}  (${result.durationMs} ms)`];
  if (result.status !== "pass") lines.push(`      spec: ${result.section}`);
  if (result.reason) lines.push(`      ${result.status === "skip" ? "skipped" : "why"}: ${result.reason}`);
  if (result.frame !== undefined) lines.push(`      frame: ${frameText(result.frame)}`);
  return lines.join("\n");
}

/** The offending frame, shortened so a 2 MiB frame does not flood the report. */
export function frameText(frame: unknown, max = 2_000): string {
  const text = typeof frame === "string" ? frame : JSON.stringify(frame);
  return text.length > max ? `${text.slice(0, max)}… (${text.length} characters)` : text;
}

/** The whole report as readable text. */
export function formatReport(report: ConformanceReport): string {
  const { total, passed, failed, skipped } = report.summary;
  return [
    `Pheby Protocol v1 conformance: ${report.url}`,
    ...report.results.map(formatResult),
    "",
    `${passed}/${total} passed, ${failed} failed, ${skipped} skipped in ${(report.durationMs / 1000).toFixed(1)} s; ` +
      `${report.frames.received} server frames validated against @pheby/protocol, ${report.frames.invalid} invalid.`,
  ].join("\n");
}
