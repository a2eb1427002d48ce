import type { ServerMessage, ServerMessageOf } from "@pheby/protocol";
import { messageIdOf } from "@pheby/testkit";
import { beforeAll, describe, expect, it } from "vitest";
import { SIM_LONG_MAX } from "../src/agent/simulator/index.js";
import { BACKEND_FAILED } from "../src/runs/engine.js";
import { createConversation, type RawClient, send, useServerWithTwoClients } from "./helpers.js";

const env = useServerWithTwoClients({ transport: "memory" });
let a: RawClient; // the sender
let b: RawClient; // another client of the same user
beforeAll(() => {
  ({ a, b } = env);
});

/**
 * Assert the run state machine on one client's frames of a run:
 * message.start → message.delta* (cumulative) → message.complete → run.finished,
 * with tool events before the completion and notices anywhere before the end.
 */
function checkRun(frames: ServerMessage[], runId: string) {
  const draft = `draft-${runId}`;
  const main = frames.filter((m) => m.type !== "tool.event" && !(m.type === "message.complete" && m.kind));
  expect(main[0]).toMatchObject({ type: "message.start", run_id: runId, message_id: draft });
  const last = main.at(-1) as ServerMessageOf<"run.finished">;
  expect(last.type).toBe("run.finished");
  expect(frames.filter((m) => m.type === "run.finished")).toHaveLength(1);
  const complete = main.at(-2) as ServerMessageOf<"message.complete">;
  expect(complete).toMatchObject({ type: "message.complete", message_id: draft });
  const deltas = main.slice(1, -2) as ServerMessageOf<"message.delta">[];
  let previous = "";
  for (const d of deltas) {
    expect(d.type).toBe("message.delta");
    expect(d.message_id).toBe(draft);
    expect(d.text.startsWith(previous) && d.text.length > previous.length).toBe(true);
    previous = d.text;
  }
  expect(complete.text.startsWith(previous)).toBe(true);
  const completeAt = frames.indexOf(complete);
  for (const [i, m] of frames.entries()) if (m.type === "tool.event") expect(i).toBeLessThan(completeAt);
  return {
    text: complete.text,
    finished: last,
    deltas,
    tools: frames.filter((m) => m.type === "tool.event"),
  };
}

/** Send `text` from a, check the run as both clients saw it, return a's view. */
async function runOf(conversationId: string, text: string) {
  const runId = await send(a, conversationId, text);
  const mine = checkRun(await a.run(runId), runId);
  const theirs = checkRun(await b.run(runId), runId);
  expect(theirs.text).toBe(mine.text);
  expect(theirs.finished).toEqual(mine.finished);
  // run.accepted reaches every client once, before message.start; only the sender's copy is the reply.
  const accepted = (frames: ServerMessage[]) => {
    const copies = frames.filter((m) => m.type === "run.accepted" && m.run_id === runId);
    expect(copies).toHaveLength(1);
    const start = frames.findIndex((m) => m.type === "message.start" && m.run_id === runId);
    expect(frames.indexOf(copies[0]!)).toBeLessThan(start);
    return copies[0]!;
  };
  expect(accepted(a.frames).request_id).toMatch(/^r/);
  expect(accepted(b.frames)).toEqual({
    type: "run.accepted",
    conversation_id: conversationId,
    run_id: runId,
  });
  return { runId, ...mine };
}

async function history(conversationId: string) {
  return a.ok({ type: "conversation.open", conversation_id: conversationId }, "conversation.history");
}

describe("runs on the simulator", () => {
  it("a plain message streams a cumulative reply and lands in history", async () => {
    const id = await createConversation(a);
    const r = await runOf(id, "Hello there");
    expect(r.finished.status).toBe("completed");
    expect(r.finished.error).toBeUndefined();
    expect(r.text).toContain('You said: "Hello there"');
    expect(r.deltas.length).toBeGreaterThan(0);
    const h = await history(id);
    expect(h.messages.map((m) => [m.role, m.text])).toEqual([
      ["user", "Hello there"],
      ["assistant", r.text],
    ]);
    expect(h.run).toBeNull();
  });

  it("/sim tools: one tool completes, one fails; args redacted only on running", async () => {
    const id = await createConversation(a);
    const r = await runOf(id, "/sim tools");
    expect(r.finished.status).toBe("completed");
    const [run1, done1, run2, fail2] = r.tools as ServerMessageOf<"tool.event">[];
    expect(run1).toMatchObject({
      status: "running",
      tool_name: "web_search",
      run_id: r.runId,
      args_redacted: { query: "pheby protocol", api_key: "[REDACTED]" },
    });
    expect(run1!.duration_ms).toBeUndefined();
    expect(done1).toMatchObject({ status: "completed", tool_call_id: run1!.tool_call_id });
    expect(done1!.args_redacted).toBeUndefined();
    expect(done1!.error).toBeUndefined();
    expect(typeof done1!.duration_ms).toBe("number");
    expect(run2).toMatchObject({
      status: "running",
      tool_name: "read_file",
      args_redacted: { auth: "[REDACTED]" },
    });
    expect(fail2).toMatchObject({ status: "failed", error: "Permission denied (simulated)" });
    expect(typeof fail2!.duration_ms).toBe("number");
    // The snapshot shows the latest state of each tool call of the last run.
    const h = await history(id);
    expect(h.tools.map((t) => [t.tool_name, t.status])).toEqual([
      ["web_search", "completed"],
      ["read_file", "failed"],
    ]);
  });

  it("/sim slow: run_active while running, a snapshot mid-run, one cancelled run.finished, stale cancel not_found", async () => {
    const id = await createConversation(a);
    const runId = await send(a, id, "/sim slow");
    await a.next("message.delta", (m) => m.message_id === messageIdOf(a.frames, runId));

    const busy = await a.request({ type: "chat.send", conversation_id: id, text: "again" }, "run.accepted");
    expect(busy).toMatchObject({ type: "error", error: { code: "run_active" } });

    const mid = await history(id);
    expect(mid.run).toMatchObject({
      run_id: runId,
      conversation_id: id,
      message_id: `draft-${runId}`,
      status: "running",
    });
    expect(mid.run!.text).toMatch(/^word1 /);

    a.send({ type: "run.cancel", conversation_id: id, run_id: runId, request_id: "cancel-1" });
    const frames = await b.run(runId);
    const { finished, text } = checkRun(frames, runId);
    // The one run.finished is broadcast and carries the canceller's request_id.
    expect(finished).toMatchObject({ status: "cancelled", request_id: "cancel-1" });
    expect(finished.error).toBeUndefined();

    const stale = await a.request({ type: "run.cancel", conversation_id: id, run_id: runId }, "run.finished");
    expect(stale).toMatchObject({ type: "error", error: { code: "not_found" } });

    // The partial answer is recorded, so history matches what the user saw; the conversation is free again.
    const h = await history(id);
    expect(h.run).toBeNull();
    expect(h.messages.map((m) => m.text)).toEqual(["/sim slow", text]);
    const next = await runOf(id, "after cancel");
    expect(next.finished.status).toBe("completed");
    expect(a.frames.filter((m) => m.type === "run.finished" && m.run_id === runId)).toHaveLength(1);
  });

  it("/sim fail ends failed with the agent's error", async () => {
    const id = await createConversation(a);
    const r = await runOf(id, "/sim fail");
    expect(r.finished).toMatchObject({ status: "failed", error: "Simulated failure (/sim fail)" });
  });

  it("a backend that throws yields failed with a generic error (no path)", async () => {
    const id = await createConversation(a);
    const r = await runOf(id, "/sim crash");
    expect(r.finished).toMatchObject({ status: "failed", error: BACKEND_FAILED });
    expect(JSON.stringify(a.frames)).not.toContain("/srv/pheby");
  });

  it("/sim notice: a notice with its own message_id, then the answer", async () => {
    const id = await createConversation(a);
    const runId = await send(a, id, "/sim notice");
    const frames = await a.run(runId);
    const notice = frames.find((m) => m.type === "message.complete" && m.kind === "notice");
    expect(notice).toMatchObject({ message_id: `notice-${runId}-1` });
    const { text } = checkRun(frames, runId);
    expect(text).toBe("This is the answer that follows the notice.");
    const h = await history(id);
    expect(h.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
  });

  it("/sim later: an unsolicited server-side run follows the reply", async () => {
    const id = await createConversation(a);
    const r = await runOf(id, "/sim later");
    expect(r.finished.status).toBe("completed");
    const accepted = await b.next("run.accepted", (m) => m.conversation_id === id && m.run_id !== r.runId);
    expect(accepted.request_id).toBeUndefined();
    const later = checkRun(await b.run(accepted.run_id), accepted.run_id);
    expect(later.text).toBe("This message arrived later, outside any run (/sim later).");
    expect(later.finished.status).toBe("completed");
    await a.next("run.finished", (m) => m.run_id === accepted.run_id);
    expect((await history(id)).messages.at(-1)?.text).toBe(later.text);
  });

  it("/sim long N replies exactly N characters; N out of range fails with usage", async () => {
    const id = await createConversation(a);
    const r = await runOf(id, "/sim long 100000");
    expect(r.text).toHaveLength(100_000);
    expect(r.deltas.length).toBeLessThanOrEqual(8);
    for (const bad of ["0", String(SIM_LONG_MAX + 1), "x"]) {
      const f = await runOf(id, `/sim long ${bad}`);
      expect(f.finished.status).toBe("failed");
      expect(f.finished.error).toMatch(/Usage: \/sim long N/);
    }
  });

  it("an unknown scenario answers with the help, which lists every scenario", async () => {
    const id = await createConversation(a);
    const r = await runOf(id, "/sim nope");
    expect(r.finished.status).toBe("completed");
    for (const name of [
      "tools",
      "slow",
      "fail",
      "notice",
      "later",
      "long",
      "approval",
      "timeout",
      "clarify",
      "file",
      "image",
    ]) {
      expect(r.text).toContain(`/sim ${name}`);
    }
  });

  it("deleting a conversation with an active run cancels it first", async () => {
    const id = await createConversation(a);
    const runId = await send(a, id, "/sim slow");
    await a.next("message.delta", (m) => m.message_id === messageIdOf(a.frames, runId));
    await a.ok({ type: "conversation.delete", conversation_id: id }, "conversation.deleted");
    await b.next("conversation.deleted", (m) => m.conversation_id === id);
    const finishedAt = b.frames.findIndex((m) => m.type === "run.finished" && m.run_id === runId);
    const deletedAt = b.frames.findIndex(
      (m) => m.type === "conversation.deleted" && m.conversation_id === id,
    );
    expect(finishedAt).toBeGreaterThan(-1);
    expect(b.frames[finishedAt]).toMatchObject({ status: "cancelled" });
    expect(deletedAt).toBeGreaterThan(finishedAt);
    const gone = await a.request({ type: "conversation.open", conversation_id: id }, "conversation.history");
    expect(gone).toMatchObject({ type: "error", error: { code: "conversation_not_found" } });
  });
});
