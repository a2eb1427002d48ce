import { frameText } from "./format.js";
import type { ConformanceReport } from "./types.js";

function xml(s: string): string {
  return (
    s
      .replace(/&/g, "&amp;")
      .replace(/</g, "&lt;")
      .replace(/>/g, "&gt;")
      .replace(/"/g, "&quot;")
      // Control characters XML 1.0 cannot carry at all (tab, LF and CR are fine).
      .replace(/[^\t\n\r\u0020-\uFFFF]/gu, (c) => (c.length > 1 ? c : "\uFFFD"))
  );
}

/** The report as a JUnit XML document, one testcase per check (classname = spec section), for CI. */
export function toJUnit(report: ConformanceReport): string {
  const { total, failed, skipped } = report.summary;
  const cases = report.results.map((r) => {
    const open = `    <testcase classname="${xml(r.section)}" name="${xml(`${r.id}: ${r.title}`)}" time="${(r.durationMs / 1000).toFixed(3)}"`;
    if (r.status === "pass") return `${open}/>`;
    if (r.status === "skip")
      return `${open}>\n      <skipped message="${xml(r.reason ?? "")}"/>\n    </testcase>`;
    const detail = r.frame === undefined ? "" : `offending frame: ${frameText(r.frame)}`;
    return `${open}>\n      <failure message="${xml(r.reason ?? "failed")}">${xml(detail)}</failure>\n    </testcase>`;
  });
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="pheby-conformance" tests="${total}" failures="${failed}" skipped="${skipped}" time="${(report.durationMs / 1000).toFixed(3)}">`,
    `  <testsuite name="Pheby Protocol v1 conformance" tests="${total}" failures="${failed}" skipped="${skipped}" timestamp="${report.startedAt}">`,
    ...cases,
    "  </testsuite>",
    "</testsuites>",
    "",
  ].join("\n");
}
