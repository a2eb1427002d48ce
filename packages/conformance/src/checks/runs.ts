import type { ServerMessage } from "@pheby/protocol";
import { expectFinished, type RunTrace } from "../context.js";
import { CheckFailure, expect } from "../failure.js";
import type { Check } from "../types.js";

const LIFECYCLE = "Chat & streaming (run lifecycle)";
const CANCEL = "Chat & streaming (run.cancel)";

/**
 * Check a run's message/run frames against the spec's state machine:
 * run.accepted → message.start → message.delta* (cumulative) → message.complete → run.finished,
 * exactly one run.finished. Returns the final text.
 */
export function checkLifecycle(trace: RunTrace, opts: { complete?: boolean } = {}): string {
  const seq = trace.frames.filter((m) => m.type.startsWith("message.") || m.type.startsWith("run."));
  const notice = (m: ServerMessage) => m.type === "message.complete" && m.kind === "notice";
  const frames = seq.filter((m) => !notice(m));
  const at = (i: number) => frames[i];
  expect(at(0)?.type === "run.accepted", "the run does not begin with run.accepted", at(0));
  expect(at(1)?.type === "message.start", "message.start does not follow run.accepted", at(1));
  const finishedCount = frames.filter((m) => m.type === "run.finished").length;
  expect(
    finishedCount === 1,
    `the run sent ${finishedCount} run.finished events, not exactly one`,
    trace.finished,
  );
  expect(frames.at(-1)?.type === "run.finished", "run.finished is not the run's last event", frames.at(-1));
  let draft = "";
  let final: string | undefined;
  for (const m of frames.slice(2, -1)) {
    if (m.type === "message.delta") {
      if (final !== undefined) throw new CheckFailure("message.delta after message.complete", m);
      if (!m.text.startsWith(draft))
        throw new CheckFailure(
          "message.delta text is not cumulative (it does not extend the previous draft)",
          m,
        );
      draft = m.text;
    } else if (m.type === "message.complete") {
      if (final !== undefined) throw new CheckFailure("a second message.complete in one run", m);
      final = m.text;
    } else {
      throw new CheckFailure(`unexpected ${m.type} inside the run`, m);
    }
  }
  if (opts.complete ?? trace.finished.status === "completed")
    expect(final !== undefined, "no message.complete before run.finished", trace.finished);
  return final ?? draft;
}

export const runChecks: Check[] = [
  {
    id: "runs.lifecycle",
    section: LIFECYCLE,
    title:
      "run.accepted → message.start → cumulative message.delta* → message.complete → one run.finished, seen by every client (run.accepted too, request_id only on the sender's copy); the transcript records both turns",
    async run(ctx) {
      const a = await ctx.connect("a");
      const b = await ctx.connect("b");
      const id = await ctx.createConversation(a);
      const text = "Hello from the Pheby conformance suite";
      const trace = await ctx.chat(a, id, text);
      expectFinished(trace, "completed");
      const final = checkLifecycle(trace);
      const start = trace.frames.find((m) => m.type === "message.start");
      await b.waitFor(
        (m) => m.type === "run.finished" && m.run_id === trace.runId,
        "run.finished on the other connection",
      );
      // Events go to every connection: the other one learns of the run first, without the sender's request_id.
      const seen = b.frames.filter(
        (m) => (m.type === "run.accepted" || m.type === "message.start") && m.run_id === trace.runId,
      );
      expect(
        seen[0]?.type === "run.accepted" && seen[1]?.type === "message.start" && seen.length === 2,
        "the other connection did not receive run.accepted once, then message.start",
        seen,
      );
      expect(
        (seen[0] as { request_id?: string }).request_id === undefined,
        "the other connection's run.accepted carries the sender's request_id",
        seen[0],
      );
      const history = await a.expectReply(
        { type: "conversation.open", conversation_id: id },
        "conversation.history",
      );
      const [user, assistant] = history.messages.slice(-2);
      expect(
        user?.role === "user" && user.text === text,
        "the transcript does not end with the user message",
        history,
      );
      expect(
        assistant?.role === "assistant" && assistant.text === final,
        "the transcript's last assistant message is not the message.complete text",
        { history: history.messages, final, start },
      );
      expect(history.run === null, "conversation.open still reports a run after run.finished", history);
    },
  },
  {
    id: "runs.run_active",
    section: LIFECYCLE,
    title: "a second chat.send during an active run gets run_active",
    needs: { simulator: true },
    async run(ctx) {
      const probe = await ctx.connect();
      const conversation_id = await ctx.createConversation(probe);
      const trace = await ctx.chat(probe, conversation_id, "/sim slow", {
        onAccepted: async (run_id) => {
          await probe.expectError(
            { type: "chat.send", conversation_id, text: "second" },
            "run_active",
            "a second chat.send",
          );
          probe.send({ type: "run.cancel", conversation_id, run_id });
        },
      });
      expectFinished(trace, "cancelled");
    },
  },
  {
    id: "runs.tools",
    section: "Tool events",
    title:
      "/sim tools: tool.event running → completed/failed by tool_call_id; args_redacted only on running, secrets redacted; duration_ms on completion; error only on failure",
    needs: { simulator: true },
    async run(ctx) {
      const probe = await ctx.connect();
      const id = await ctx.createConversation(probe);
      const trace = await ctx.chat(probe, id, "/sim tools");
      expectFinished(trace, "completed");
      checkLifecycle(trace);
      const events = probe.frames.filter((m) => m.type === "tool.event" && m.conversation_id === id);
      const byCall = new Map<string, typeof events>();
      for (const e of events)
        if (e.type === "tool.event") byCall.set(e.tool_call_id, [...(byCall.get(e.tool_call_id) ?? []), e]);
      const finals = new Set<string>();
      for (const [callId, list] of byCall) {
        const [first, ...rest] = list;
        expect(
          first?.type === "tool.event" && first.status === "running",
          `tool ${callId} does not start with running`,
          first,
        );
        const last = rest.at(-1);
        expect(
          last?.type === "tool.event" && last.status !== "running",
          `tool ${callId} never finished`,
          list,
        );
        for (const e of list) {
          if (e.type !== "tool.event") continue;
          if (e.status !== "running" && e.args_redacted !== undefined)
            throw new CheckFailure("args_redacted appears on a non-running tool.event", e);
          if (e.status !== "failed" && e.error !== undefined)
            throw new CheckFailure("error appears on a tool.event that did not fail", e);
          if (e.status === "running" && e.duration_ms !== undefined && e.duration_ms !== null)
            throw new CheckFailure("duration_ms appears on a running tool.event", e);
          leakedSecret(e.args_redacted, e);
        }
        if (last?.type === "tool.event") {
          finals.add(last.status);
          expect(last.duration_ms !== undefined, "a finished tool.event has no duration_ms", last);
          if (last.status === "failed") expect(last.error, "a failed tool.event has no error", last);
        }
      }
      expect(
        finals.has("completed") && finals.has("failed"),
        "/sim tools should end one tool completed and one failed",
        events,
      );
    },
  },
  {
    id: "runs.failed",
    section: LIFECYCLE,
    title: "/sim fail: exactly one run.finished with status failed and an error",
    needs: { simulator: true },
    async run(ctx) {
      const probe = await ctx.connect();
      const trace = await ctx.chat(probe, await ctx.createConversation(probe), "/sim fail");
      expectFinished(trace, "failed");
      expect(trace.finished.error, "a failed run.finished has no error", trace.finished);
      checkLifecycle(trace, { complete: false });
    },
  },
  {
    id: "runs.notice",
    section: LIFECYCLE,
    title: '/sim notice: a message.complete with kind "notice", and the run completes',
    needs: { simulator: true },
    async run(ctx) {
      const probe = await ctx.connect();
      const id = await ctx.createConversation(probe);
      const from = probe.frames.length;
      const trace = await ctx.chat(probe, id, "/sim notice");
      expectFinished(trace, "completed");
      expect(
        probe.frames
          .slice(from)
          .some((m) => m.type === "message.complete" && m.conversation_id === id && m.kind === "notice"),
        'no message.complete with kind "notice"',
        trace.frames,
      );
    },
  },
  {
    id: "runs.long",
    section: LIFECYCLE,
    title: "/sim long 70000: the final text has exactly 70,000 characters",
    needs: { simulator: true },
    async run(ctx) {
      const probe = await ctx.connect();
      const trace = await ctx.chat(probe, await ctx.createConversation(probe), "/sim long 70000");
      expectFinished(trace, "completed");
      const final = checkLifecycle(trace);
      expect(final.length === 70_000, `the final text has ${final.length} characters`, trace.finished);
    },
  },
  {
    id: "runs.unsolicited",
    section: "Unsolicited messages & reconnect behavior",
    title: "/sim later: output outside any run arrives as normal message.* / run.* events",
    needs: { simulator: true },
    async run(ctx) {
      const probe = await ctx.connect();
      const id = await ctx.createConversation(probe);
      const trace = await ctx.chat(probe, id, "/sim later");
      expectFinished(trace, "completed");
      const from = probe.frames.length;
      const wait = { from, timeoutMs: ctx.timeoutMs + 5_000 };
      const complete = await probe.waitFor(
        (m) => m.type === "message.complete" && m.conversation_id === id,
        "an unsolicited message.complete",
        wait,
      );
      const finished = await probe.waitFor(
        (m) => m.type === "run.finished" && m.conversation_id === id && m.run_id !== trace.runId,
        "the unsolicited run's run.finished",
        wait,
      );
      expect(
        finished.type === "run.finished" && finished.status === "completed",
        "the unsolicited run did not complete",
        finished,
      );
      expect(
        complete.type === "message.complete" && complete.text.length > 0,
        "the unsolicited message is empty",
        complete,
      );
    },
  },
  {
    id: "cancel.active",
    section: CANCEL,
    title:
      "run.cancel of the active run: exactly one run.finished cancelled; cancelling again gets not_found; the conversation stays usable",
    needs: { simulator: true },
    async run(ctx) {
      const probe = await ctx.connect();
      const conversation_id = await ctx.createConversation(probe);
      const trace = await ctx.chat(probe, conversation_id, "/sim slow", {
        onAccepted: async (run_id) => {
          await probe.waitFor(
            (m) => m.type === "message.delta" && m.conversation_id === conversation_id,
            "a first message.delta",
          );
          probe.send({ type: "run.cancel", conversation_id, run_id, request_id: "cancel-1" });
        },
      });
      expectFinished(trace, "cancelled");
      // A round trip later, nothing more of that run may arrive.
      await probe.expectError(
        { type: "run.cancel", conversation_id, run_id: trace.runId },
        "not_found",
        "a second run.cancel",
      );
      const finishes = probe.frames.filter((m) => m.type === "run.finished" && m.run_id === trace.runId);
      expect(finishes.length === 1, `${finishes.length} run.finished events for the cancelled run`, finishes);
      const history = await probe.expectReply(
        { type: "conversation.open", conversation_id },
        "conversation.history",
      );
      expect(history.run === null, "conversation.open still shows the cancelled run", history);
      const next = await ctx.chat(probe, conversation_id, "/sim long 1");
      expectFinished(next, "completed");
    },
  },
  {
    id: "cancel.unknown_run",
    section: CANCEL,
    title: "run.cancel with an unknown run_id gets not_found",
    async run(ctx) {
      const probe = await ctx.connect();
      const conversation_id = await ctx.createConversation(probe);
      await probe.expectError(
        { type: "run.cancel", conversation_id, run_id: "no-such-run" },
        "not_found",
        "an unknown run_id",
      );
    },
  },
];

const SECRET_KEY = /token|secret|passw|api[-_]?key|authori[sz]ation|cookie|credential|private[-_]?key/i;

/** Fail when a secret-looking key under args_redacted still holds something other than a redaction marker. */
function leakedSecret(value: unknown, frame: unknown): void {
  if (typeof value !== "object" || value === null) return;
  for (const [key, inner] of Object.entries(value)) {
    if (SECRET_KEY.test(key) && !(typeof inner === "string" && /redact|\*{3}/i.test(inner)))
      throw new CheckFailure(`args_redacted.${key} is not redacted`, frame);
    leakedSecret(inner, frame);
  }
}
