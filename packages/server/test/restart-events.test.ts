import { ServerMessage } from "@pheby/protocol";
import { describe, expect, it } from "vitest";
import { interruptedRunEvents } from "../src/resume/restart.js";
import type { LoggedEvent } from "../src/store/resume-log.js";

const C = "c".repeat(32);
const RUN = "1".repeat(32);
const OTHER = "2".repeat(32);
const TS = "2026-09-02T18:00:00.000Z";
const LATER = "2026-09-02T19:00:00.000Z";
const ERROR = "The server stopped during this run";

const logged = (events: ServerMessage[]): LoggedEvent[] =>
  events.map((event, i) => ({ seq: i + 1, feature: null, event, fields: null }));

const question = (type: "approval" | "clarify", id: string, runId: string | null): ServerMessage =>
  type === "approval"
    ? {
        type: "approval.request",
        approval_id: id,
        session_key: "s",
        conversation_id: C,
        run_id: runId,
        command: "rm -rf /tmp/x",
        description: "Destructive",
        choices: ["once", "deny"],
        ts: TS,
      }
    : {
        type: "clarify.request",
        clarify_id: id,
        session_key: "s",
        conversation_id: C,
        run_id: runId,
        question: "Which?",
        choices: null,
        allow_free_text: true,
        ts: TS,
      };

const toolEvent = (id: string, status: "running" | "completed", runId = RUN): ServerMessage => ({
  type: "tool.event",
  conversation_id: C,
  run_id: runId,
  tool_call_id: id,
  tool_name: `tool-${id}`,
  status,
  ...(status === "running" ? {} : { duration_ms: 3 }),
  ts: TS,
});

describe("what a restart did to an interrupted run", () => {
  it("withdraws its pending questions, cancels its running tools, completes the draft, fails the run", () => {
    const held = logged([
      { type: "run.accepted", conversation_id: C, run_id: RUN },
      { type: "message.start", conversation_id: C, run_id: RUN, message_id: `draft-${RUN}` },
      { type: "message.delta", conversation_id: C, message_id: `draft-${RUN}`, text: "Half an", ts: TS },
      toolEvent("t1", "running"),
      toolEvent("t1", "completed"),
      toolEvent("t2", "running"),
      question("approval", "a1", RUN),
      question("approval", "a2", RUN),
      { type: "approval.resolved", approval_id: "a2", choice: "once", accepted: true },
      question("clarify", "q1", RUN),
      question("clarify", "q0", null),
      {
        type: "message.delta",
        conversation_id: C,
        message_id: `draft-${RUN}`,
        text: "Half an answer",
        ts: TS,
      },
    ]);
    const events = interruptedRunEvents(held, { conversationId: C, runId: RUN }, ERROR, LATER);
    expect(events).toEqual([
      { type: "approval.resolved", approval_id: "a1", choice: "deny", accepted: false },
      { type: "clarify.resolved", clarify_id: "q1", accepted: false },
      { type: "clarify.resolved", clarify_id: "q0", accepted: false },
      {
        type: "tool.event",
        conversation_id: C,
        run_id: RUN,
        tool_call_id: "t2",
        tool_name: "tool-t2",
        status: "cancelled",
        duration_ms: null,
        ts: LATER,
      },
      {
        type: "message.complete",
        conversation_id: C,
        message_id: `draft-${RUN}`,
        text: "Half an answer",
        ts: LATER,
      },
      { type: "run.finished", conversation_id: C, run_id: RUN, status: "failed", error: ERROR },
    ]);
    for (const e of events) expect(ServerMessage.safeParse(e).success).toBe(true);
  });

  it("leaves other runs' questions and tools alone", () => {
    const held = logged([
      question("approval", "old", OTHER),
      toolEvent("t9", "running", OTHER),
      { type: "run.finished", conversation_id: C, run_id: OTHER, status: "completed" },
      { type: "run.accepted", conversation_id: C, run_id: RUN },
    ]);
    expect(interruptedRunEvents(held, { conversationId: C, runId: RUN }, ERROR, LATER)).toEqual([
      { type: "message.complete", conversation_id: C, message_id: `draft-${RUN}`, text: "", ts: LATER },
      { type: "run.finished", conversation_id: C, run_id: RUN, status: "failed", error: ERROR },
    ]);
  });

  it("adds nothing for a run the log shows finished", () => {
    const held = logged([
      { type: "run.accepted", conversation_id: C, run_id: RUN },
      { type: "run.finished", conversation_id: C, run_id: RUN, status: "completed" },
    ]);
    expect(interruptedRunEvents(held, { conversationId: C, runId: RUN }, ERROR, LATER)).toEqual([]);
  });

  it("still closes the run when its start was evicted from the log", () => {
    expect(interruptedRunEvents([], { conversationId: C, runId: RUN }, ERROR, LATER)).toEqual([
      { type: "message.complete", conversation_id: C, message_id: `draft-${RUN}`, text: "", ts: LATER },
      { type: "run.finished", conversation_id: C, run_id: RUN, status: "failed", error: ERROR },
    ]);
  });
});
