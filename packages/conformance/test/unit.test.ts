import type { ServerMessage } from "@pheby/protocol";
import { describe, expect, it } from "vitest";
import { checkLifecycle } from "../src/checks/runs.js";
import type { RunTrace } from "../src/context.js";
import { CheckFailure } from "../src/failure.js";
import {
  CHECKS,
  type ConformanceReport,
  formatReport,
  matchesPattern,
  selectChecks,
  serverUrls,
  toJUnit,
} from "../src/index.js";

const TS = "2026-09-02T18:00:00.000Z";
const c = "a".repeat(32);
const run = (frames: ServerMessage[]): RunTrace => ({
  runId: "r1",
  conversationId: c,
  frames,
  finished: [...frames].reverse().find((m) => m.type === "run.finished") as RunTrace["finished"],
});
const accepted: ServerMessage = { type: "run.accepted", conversation_id: c, run_id: "r1" };
const start: ServerMessage = { type: "message.start", conversation_id: c, run_id: "r1", message_id: "m1" };
const delta = (text: string): ServerMessage => ({
  type: "message.delta",
  conversation_id: c,
  message_id: "m1",
  text,
  ts: TS,
});
const complete: ServerMessage = {
  type: "message.complete",
  conversation_id: c,
  message_id: "m1",
  text: "Hello world",
  ts: TS,
};
const finished: ServerMessage = {
  type: "run.finished",
  conversation_id: c,
  run_id: "r1",
  status: "completed",
};

function failure(frames: ServerMessage[]): CheckFailure {
  try {
    checkLifecycle(run(frames));
  } catch (err) {
    if (err instanceof CheckFailure) return err;
    throw err;
  }
  throw new Error("checkLifecycle accepted the trace");
}

describe("checkLifecycle", () => {
  it("accepts the spec's state machine and returns the final text", () => {
    expect(
      checkLifecycle(run([accepted, start, delta("Hello"), delta("Hello world"), complete, finished])),
    ).toBe("Hello world");
    expect(checkLifecycle(run([accepted, start, complete, finished]))).toBe("Hello world");
  });

  it("names the violation and the offending frame", () => {
    expect(failure([accepted, delta("Hello"), complete, finished]).message).toContain("message.start");
    const appended = failure([accepted, start, delta("Hello"), delta(" world"), complete, finished]);
    expect(appended.message).toContain("cumulative");
    expect(appended.frame).toMatchObject({ text: " world" });
    expect(failure([accepted, start, complete, finished, finished]).message).toContain("2 run.finished");
    expect(failure([accepted, start, delta("Hello"), finished]).message).toContain("no message.complete");
    expect(failure([accepted, start, complete, delta("Hello world!"), finished]).message).toContain(
      "after message.complete",
    );
  });
});

describe("selection", () => {
  it("matches ids with * wildcards only", () => {
    expect(matchesPattern("runs.lifecycle", "runs.*")).toBe(true);
    expect(matchesPattern("runs.lifecycle", "runs.life")).toBe(false);
    expect(matchesPattern("runsXlifecycle", "runs.lifecycle")).toBe(false);
  });

  it("every check has a unique id, a spec section and a title", () => {
    expect(new Set(CHECKS.map((c) => c.id)).size).toBe(CHECKS.length);
    for (const check of CHECKS)
      expect(check.section && check.title && /^[a-z]+\.[a-z_]+$/.test(check.id)).toBeTruthy();
    expect(
      selectChecks({ only: ["handshake.*"], skip: ["handshake.auth_timeout"] }).map((c) => c.id),
    ).toEqual([
      "handshake.ready",
      "handshake.unauthorized",
      "handshake.version_mismatch",
      "handshake.hello_first",
    ]);
  });

  it("sends at most 4 failing hellos per run, under the 5-per-60-s lockout", () => {
    expect(CHECKS.filter((c) => c.needs?.authFailures).length).toBeLessThanOrEqual(4);
  });

  it("derives ws and http URLs from either form", () => {
    expect(serverUrls("http://h:1")).toEqual({ ws: "ws://h:1/ws", http: "http://h:1" });
    expect(serverUrls("wss://h/pheby/ws")).toEqual({ ws: "wss://h/pheby/ws", http: "https://h/pheby" });
  });
});

describe("reports", () => {
  const report: ConformanceReport = {
    url: "ws://127.0.0.1:1/ws",
    startedAt: TS,
    durationMs: 1500,
    ok: false,
    summary: { total: 3, passed: 1, failed: 1, skipped: 1 },
    frames: { received: 10, invalid: 0 },
    results: [
      { id: "heartbeat.ping", section: "Heartbeat", title: "ping", status: "pass", durationMs: 3 },
      {
        id: "runs.lifecycle",
        section: "Chat <run>",
        title: "a & b",
        status: "fail",
        reason: 'bad "x"',
        frame: { type: "run.finished" },
        durationMs: 5,
      },
      {
        id: "runs.tools",
        section: "Tool events",
        title: "tools",
        status: "skip",
        reason: "no sim",
        durationMs: 0,
      },
    ],
  };

  it("text: status, id, section, reason and frame of each non-passing check", () => {
    const text = formatReport(report);
    expect(text).toContain("FAIL  runs.lifecycle");
    expect(text).toContain("spec: Chat <run>");
    expect(text).toContain('frame: {"type":"run.finished"}');
    expect(text).toContain("1/3 passed, 1 failed, 1 skipped");
  });

  it("JUnit: one escaped testcase per check with failure and skipped elements", () => {
    const xml = toJUnit(report);
    expect(xml).toContain('tests="3" failures="1" skipped="1"');
    expect(xml).toContain('classname="Chat &lt;run&gt;" name="runs.lifecycle: a &amp; b"');
    expect(xml).toContain(
      '<failure message="bad &quot;x&quot;">offending frame: {&quot;type&quot;:&quot;run.finished&quot;}</failure>',
    );
    expect(xml).toContain('<skipped message="no sim"/>');
  });
});
