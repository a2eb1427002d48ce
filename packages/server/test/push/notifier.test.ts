import { ServerMessage } from "@pheby/protocol";
import { describe, expect, it } from "vitest";
import { Fanout } from "../../src/outbox/fanout.js";
import type { OutboxEvent, Peer } from "../../src/outbox/outbox.js";
import { PushNotifier } from "../../src/push/notifier.js";
import { pushTopic } from "../../src/push/payload.js";
import { Presence } from "../../src/push/presence.js";
import { systemClock } from "../../src/util/time.js";
import { FakePeer } from "../fake-peer.js";
import { CONV, phoneRig, type Rig, rig } from "./rig.js";

const OTHER = "ffffffffffffffffffffffffffffffff";
const RUN = "8c1f2e3d4c5b6a798877665544332211";
const TS = "2026-09-02T18:00:00.000Z";

/** A rig with one subscribed endpoint and a notifier over it. */
async function withPhone() {
  const { r, phone } = await phoneRig();
  return { r, phone, ...notifier(r) };
}

/** Connections still connected, as the Fanout's peers would be. */
const live = new Set<Peer>();

function notifier(r: Rig, presence = new Presence(() => live)) {
  const inner = new Fanout();
  const n = new PushNotifier(inner, {
    store: r.push,
    delivery: r.delivery,
    presence,
    clock: systemClock,
    log: r.log,
    preview: true,
    conversationName: (id) => (id === CONV ? "Project X" : id === OTHER ? "Other" : undefined),
  });
  // Every event fed to the notifier is a frame the server may send.
  const observe = (msg: unknown, extra: Partial<OutboxEvent> = {}) => {
    const message = ServerMessage.parse(msg);
    const conversationId = "conversation_id" in message ? (message.conversation_id ?? null) : CONV;
    n.publish({ message, conversationId, ...extra });
  };
  /** Whether a client started each run, as the engine's run events say. */
  const byClient = new Map<string, boolean>();
  /**
   * A run accepted, then its answer started (as the engine sends them): a client's chat.send is the
   * reply-to; the agent's own run has none. The answer's id is opaque: the notifier must not parse it.
   */
  const runStarted = (runId: string, solicited: boolean) => {
    byClient.set(runId, solicited);
    observe(
      { type: "run.accepted", conversation_id: CONV, run_id: runId },
      solicited ? { replyTo: { peer: { id: 1 } as never, requestId: "r1" } } : {},
    );
    observe({ type: "message.start", conversation_id: CONV, run_id: runId, message_id: answerId(runId) });
  };
  /** A run's end: its last frames, then the engine's `finished` run event with the answer's text. */
  const runEnded = (
    runId: string,
    status: "completed" | "failed" | "cancelled",
    text: string,
    error?: string,
  ) => {
    observe({ type: "message.complete", conversation_id: CONV, message_id: answerId(runId), text, ts: TS });
    observe({
      type: "run.finished",
      conversation_id: CONV,
      run_id: runId,
      status,
      ...(error === undefined ? {} : { error }),
    });
    n.runFinished({
      conversationId: CONV,
      runId,
      byClient: byClient.get(runId) ?? false,
      status,
      ...(error === undefined ? {} : { error }),
      text,
    });
  };
  return { n, presence, observe, runStarted, runEnded };
}

/** The message id of a run's answer in these tests: deliberately not the engine's format. */
const answerId = (runId: string) => `answer-of-${runId}`;

const approvalRequest = (id = "a1", conversation_id = CONV) => ({
  type: "approval.request",
  approval_id: id,
  session_key: "s",
  conversation_id,
  run_id: RUN,
  command: "rm -rf /tmp/build-output",
  description: "Destructive shell command (rm -rf)",
  choices: ["once", "deny"],
  ts: TS,
});

function finishRun(
  runEnded: (
    runId: string,
    status: "completed" | "failed" | "cancelled",
    text: string,
    error?: string,
  ) => void,
  status: "completed" | "failed" | "cancelled",
  text: string,
) {
  runEnded(RUN, status, text, status === "failed" ? "The agent backend failed" : undefined);
}

describe("PushNotifier: one push per event", () => {
  it("a run a client started pushes run_finished with the first line of the answer; a notice is not the answer", async () => {
    const { r, phone, runStarted, runEnded, observe } = await withPhone();
    runStarted(RUN, true);
    observe({
      type: "message.complete",
      conversation_id: CONV,
      message_id: `notice-${RUN}-1`,
      text: "Compacting…",
      kind: "notice",
      ts: TS,
    });
    finishRun(runEnded, "completed", "Done: 3 files changed.\nDetails…");
    expect((await phone.next()).payload).toMatchObject({
      kind: "run_finished",
      status: "completed",
      body: "Done: 3 files changed.",
    });
    await r.delivery.idle();
    expect(phone.requests).toBe(1);
  });

  it("an unsolicited run pushes message, never run_finished too", async () => {
    const { r, phone, runStarted, runEnded } = await withPhone();
    runStarted(RUN, false);
    finishRun(runEnded, "completed", "Nightly report: all green");
    expect((await phone.next()).payload).toMatchObject({
      kind: "message",
      body: "Nightly report: all green",
      run_id: RUN,
    });
    await r.delivery.idle();
    expect(phone.requests).toBe(1);
  });

  it("a failed run pushes run_finished failed; a cancelled one pushes nothing", async () => {
    const { r, phone, runStarted, runEnded } = await withPhone();
    runStarted(RUN, true);
    finishRun(runEnded, "cancelled", "partial");
    runStarted("r2", true);
    runEnded("r2", "failed", "", "The agent backend failed");
    expect((await phone.next()).payload).toMatchObject({
      kind: "run_finished",
      run_id: "r2",
      status: "failed",
      body: "The agent backend failed",
    });
    await r.delivery.idle();
    expect(phone.requests).toBe(1);
  });

  it("approval with the running tool's name, then resolved with the same Topic when answered", async () => {
    const { r, phone, runStarted, observe } = await withPhone();
    runStarted(RUN, true);
    observe({
      type: "tool.event",
      conversation_id: CONV,
      run_id: RUN,
      tool_call_id: "t1",
      tool_name: "run_shell_command",
      status: "running",
      args_redacted: {},
      ts: TS,
    });
    observe(approvalRequest());
    const asked = await phone.next();
    expect(asked.payload).toMatchObject({
      kind: "approval",
      approval_id: "a1",
      tool: "run_shell_command",
      body: "rm -rf /tmp/build-output",
    });
    observe({ type: "approval.resolved", approval_id: "a1", choice: "once", accepted: true });
    const resolved = await phone.next();
    expect(resolved.payload).toEqual({
      v: 1,
      kind: "resolved",
      tag: asked.payload.tag,
      ts: expect.any(String),
      conversation_id: CONV,
      approval_id: "a1",
    });
    expect(resolved.headers.topic).toBe(asked.headers.topic);
    // A second resolution of the same id (cannot happen, but) pushes nothing more.
    observe({ type: "approval.resolved", approval_id: "a1", choice: "once", accepted: true });
    await r.delivery.idle();
    expect(phone.requests).toBe(2);
  });

  it("clarify and its withdrawal", async () => {
    const { phone, observe } = await withPhone();
    observe({
      type: "clarify.request",
      clarify_id: "c1",
      session_key: "s",
      conversation_id: CONV,
      run_id: null,
      question: "Deploy where?",
      choices: null,
      allow_free_text: true,
      ts: TS,
    });
    expect((await phone.next()).payload).toMatchObject({
      kind: "clarify",
      clarify_id: "c1",
      body: "Deploy where?",
      choices: null,
    });
    observe({ type: "clarify.resolved", clarify_id: "c1", accepted: false });
    const resolved = await phone.next();
    expect(resolved.payload).toMatchObject({ kind: "resolved", conversation_id: CONV, clarify_id: "c1" });
    expect(resolved.headers.topic).toBe(pushTopic(CONV, "clarify"));
  });

  it("only to subscriptions that chose the event", async () => {
    const r = await rig();
    const approvals = r.receiver.endpoint("approvals-only");
    const results = r.receiver.endpoint("results-only");
    r.subscribe(approvals, ["approval"]);
    r.subscribe(results, ["run_finished"]);
    const { runStarted, runEnded, observe } = notifier(r);
    observe(approvalRequest());
    runStarted(RUN, true);
    finishRun(runEnded, "completed", "ok");
    expect((await approvals.next()).payload.kind).toBe("approval");
    expect((await results.next()).payload.kind).toBe("run_finished");
    await r.delivery.idle();
    expect([approvals.requests, results.requests]).toEqual([1, 1]);
  });
});

describe("PushNotifier: presence", () => {
  it("skips a conversation's push only while a live connection is active on it", async () => {
    const r = await rig();
    const phone = r.receiver.endpoint("phone");
    r.subscribe(phone);
    const presence = new Presence(() => live);
    const { observe } = notifier(r, presence);
    const console = new FakePeer();
    const tablet = new FakePeer();
    live.add(console).add(tablet);

    // Each step waits for the queue: approvals of one conversation share a Topic, so a queued one
    // would be superseded by the next.
    const ask = async (id: string, conversation = CONV) => {
      observe(approvalRequest(id, conversation));
      await r.delivery.idle();
    };
    presence.update(console, { state: "active", conversationId: CONV });
    await ask("a-watched");
    // Active on another conversation, or in the background: not proof.
    await ask("a-other", OTHER);
    presence.update(tablet, { state: "background" });
    presence.update(console, { state: "active", conversationId: OTHER });
    await ask("a-moved");
    presence.update(console, { state: "active", conversationId: CONV });
    live.delete(console); // the connection went away
    await ask("a-gone");
    presence.update(tablet, { state: "active" });
    await ask("a-no-conversation");

    const ids = phone.received.map((p) => p.payload.approval_id);
    expect(ids).toEqual(["a-other", "a-moved", "a-gone", "a-no-conversation"]);
    // The watched approval was never pushed, so its resolution pushes nothing either.
    observe({ type: "approval.resolved", approval_id: "a-watched", choice: "deny", accepted: true });
    await r.delivery.idle();
    expect(phone.requests).toBe(4);
  });
});
