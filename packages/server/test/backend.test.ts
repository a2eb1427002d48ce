import type { ServerMessageOf } from "@pheby/protocol";
import { messageIdOf } from "@pheby/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AgentBackend, AgentHost, TurnResult, TurnSink } from "../src/index.js";
import { BACKEND_FAILED } from "../src/runs/engine.js";
import {
  createConversation,
  NO_CAPABILITIES,
  RawClient,
  send,
  startServer,
  type TestServer,
} from "./helpers.js";

/** Resolves once the "late" script has made its calls after the end of its run. */
let lateDone: Promise<void> = Promise.resolve();

/** A scripted backend: each message text picks a (mis)behaviour. */
function scripted(): AgentBackend & { host?: AgentHost } {
  const backend: AgentBackend & { host?: AgentHost } = {
    name: "scripted",
    capabilities: NO_CAPABILITIES,
    async start(host) {
      backend.host = host;
    },
    async createSession(conversationId) {
      return { sessionId: `s-${conversationId}` };
    },
    async prompt(input, sink: TurnSink): Promise<TurnResult> {
      switch (input.text) {
        case "undefined":
          return undefined as unknown as TurnResult;
        case "late":
          sink.text("on time");
          lateDone = new Promise((resolve) =>
            setTimeout(() => {
              sink.text(" too late");
              sink.toolStart({ toolCallId: "late", toolName: "x" });
              sink.notice("late notice");
              resolve();
            }, 5),
          );
          return { status: "completed" };
        case "open tool":
          sink.toolStart({ toolCallId: "t1", toolName: "shell", args: { cmd: "ls", token: "x" } });
          sink.toolEnd({ toolCallId: "ghost", status: "completed" });
          sink.text("done");
          return { status: "completed" };
        case "text tools":
          sink.text("a");
          for (const id of ["t1", "t2"]) {
            sink.toolStart({ toolCallId: id, toolName: "x" });
            sink.toolEnd({ toolCallId: id, status: "completed" });
          }
          sink.text("b");
          return { status: "completed" };
        case "deaf":
          // Ignores the abort signal and never ends on its own.
          sink.text("listening");
          return new Promise<TurnResult>(() => {});
        case "long error":
          return { status: "failed", error: "e".repeat(2_000) };
        default:
          sink.text("ok");
          return { status: "completed" };
      }
    },
    async close() {},
  };
  return backend;
}

let ts: TestServer;
let c: RawClient;
const backend = scripted();
beforeAll(async () => {
  ts = await startServer({ agent: backend, cancelGraceMs: 100 });
  c = await RawClient.connect(ts.wsUrl);
});
afterAll(async () => {
  c.close();
  await ts.cleanup();
});

describe("the run engine holds the protocol whatever the backend does", () => {
  it("an invalid TurnResult becomes failed", async () => {
    const id = await createConversation(c);
    const runId = await send(c, id, "undefined");
    expect(await c.next("run.finished", (m) => m.run_id === runId)).toMatchObject({
      status: "failed",
      error: BACKEND_FAILED,
    });
  });

  it("output after the end of a run is dropped", async () => {
    const id = await createConversation(c);
    const runId = await send(c, id, "late");
    await c.next("run.finished", (m) => m.run_id === runId);
    await lateDone;
    await c.ok({ type: "ping" }, "pong"); // anything the server sent before this has arrived
    const end = c.frames.findIndex((m) => m.type === "run.finished" && m.run_id === runId);
    const after = c.frames.slice(end + 1).filter((m) => m.type !== "pong");
    expect(after).toEqual([]);
  });

  it("a tool left running is closed as cancelled; an unknown tool end is reported with what is known", async () => {
    const id = await createConversation(c);
    const runId = await send(c, id, "open tool");
    const frames = await c.run(runId);
    const tools = frames.filter((m) => m.type === "tool.event") as ServerMessageOf<"tool.event">[];
    expect(tools.map((t) => [t.tool_call_id, t.status])).toEqual([
      ["t1", "running"],
      ["ghost", "completed"],
      ["t1", "cancelled"],
    ]);
    expect(tools[0]!.args_redacted).toEqual({ cmd: "ls", token: "[REDACTED]" });
    expect(tools[1]).toMatchObject({ tool_name: "unknown", duration_ms: null });
    const h = await c.ok({ type: "conversation.open", conversation_id: id }, "conversation.history");
    expect(h.tools.map((t) => t.status)).toEqual(["cancelled", "completed"]);
  });

  it("text before tool events is flushed once, never as a repeated delta", async () => {
    const id = await createConversation(c);
    const runId = await send(c, id, "text tools");
    const frames = await c.run(runId);
    const deltas = frames.filter((m) => m.type === "message.delta").map((m) => ("text" in m ? m.text : ""));
    expect(deltas[0]).toBe("a");
    expect(new Set(deltas).size).toBe(deltas.length);
    const types = frames.map((m) => m.type);
    expect(types.indexOf("message.delta")).toBeLessThan(types.indexOf("tool.event"));
    expect(frames.find((m) => m.type === "message.complete")).toMatchObject({ text: "ab" });
  });

  it("a backend that ignores cancellation cannot keep the conversation busy", async () => {
    const id = await createConversation(c);
    const runId = await send(c, id, "deaf");
    await c.next("message.delta", (m) => m.message_id === messageIdOf(c.frames, runId));
    c.send({ type: "run.cancel", conversation_id: id, run_id: runId, request_id: "x" });
    // Finished after the engine's cancel grace (`cancelGraceMs`, 100 ms here; 5 s by default), not never.
    const finished = await c.next("run.finished", (m) => m.run_id === runId, 15_000);
    expect(finished).toMatchObject({ status: "cancelled", request_id: "x" });
    await c.run(await send(c, id, "free again"));
  });

  it("a backend error is truncated", async () => {
    const id = await createConversation(c);
    const runId = await send(c, id, "long error");
    const finished = await c.next("run.finished", (m) => m.run_id === runId);
    expect(finished.error).toHaveLength(500);
  });
});

describe("AgentHost callbacks", () => {
  it("unsolicited text becomes a server-side run; a notice a bare notice; unknown sessions are dropped", async () => {
    const id = await createConversation(c);
    backend.host!.unsolicited({ sessionId: "nobody", text: "lost" });
    backend.host!.unsolicited({ sessionId: `s-${id}`, text: "Heads up", kind: "notice" });
    const notice = await c.next("message.complete", (m) => m.conversation_id === id);
    expect(notice).toMatchObject({ kind: "notice", text: "Heads up" });
    expect(notice.message_id).toMatch(/^notice-/);
    backend.host!.unsolicited({ sessionId: `s-${id}`, text: "Scheduled delivery" });
    const accepted = await c.next("run.accepted", (m) => m.conversation_id === id);
    expect(accepted.request_id).toBeUndefined();
    const frames = await c.run(accepted.run_id);
    expect(frames.map((m) => m.type)).toEqual([
      "message.start",
      "message.delta",
      "message.complete",
      "run.finished",
    ]);
    expect(JSON.stringify(c.frames)).not.toContain("lost");
  });

  it("unsolicited text waits for the conversation's active run", async () => {
    const id = await createConversation(c);
    const runId = await send(c, id, "late");
    backend.host!.unsolicited({ sessionId: `s-${id}`, text: "queued" });
    const accepted = await c.next("run.accepted", (m) => m.conversation_id === id && m.run_id !== runId);
    const first = c.frames.findIndex((m) => m.type === "run.finished" && m.run_id === runId);
    const second = c.frames.indexOf(accepted);
    expect(first).toBeGreaterThan(-1);
    expect(second).toBeGreaterThan(first);
    await c.run(accepted.run_id);
  });

  it("an agent title renames the conversation unless the user renamed it", async () => {
    const id = await createConversation(c);
    backend.host!.sessionTitle(`s-${id}`, "Agent title");
    expect(
      await c.next("conversation.updated", (m) => m.conversation_id === id && m.name === "Agent title"),
    ).toBeTruthy();
    await c.ok({ type: "conversation.rename", conversation_id: id, name: "Mine" }, "conversation.renamed");
    backend.host!.sessionTitle(`s-${id}`, "Agent again");
    const snap = await c.ok({ type: "conversation.list" }, "conversation.snapshot");
    expect(snap.conversations.find((x) => x.conversation_id === id)?.name).toBe("Mine");
  });
});
