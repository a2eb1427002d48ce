// The `activity` and `thoughts` extensions in the client, against a scripted peer on 127.0.0.1: thought
// deltas stitched like message deltas (a missed one repaired by one re-open), chat() yielding a run's
// thoughts, plan and usage, and what the client asks for by default.
import type { ServerMessage } from "@pheby/protocol";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DEFAULT_FEATURES, PhebyClient, type PhebyClientOptions } from "../src/index.js";
import { defaultHandler, emptyHistory, ScriptedPeer, TS } from "./peer.js";

let peer: ScriptedPeer;
const clients: PhebyClient[] = [];
const client = (extra: Partial<PhebyClientOptions> = {}) => {
  const c = new PhebyClient({ url: peer.url, secret: "s3cret", reconnect: false, ...extra });
  clients.push(c);
  return c;
};

beforeEach(async () => {
  peer = await ScriptedPeer.start();
});
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await peer.close();
});

const ready = (request_id: unknown, features: readonly string[]) => ({
  type: "ready",
  protocol_version: 1,
  server: "pheby",
  features,
  ts: TS,
  request_id,
});
const thought = (thought_id: string, text: string, offset: number, run_id = "run1") => ({
  type: "thought.delta",
  conversation_id: "c1",
  run_id,
  thought_id,
  offset,
  text,
  ts: TS,
});
const thoughtComplete = (thought_id: string, text: string, run_id = "run1") => ({
  type: "thought.complete",
  conversation_id: "c1",
  run_id,
  thought_id,
  text,
  ts: TS,
});
const plan = (run_id: string | null, statuses: string[]) => ({
  type: "plan.updated",
  conversation_id: "c1",
  run_id,
  entries: statuses.map((status, i) => ({ content: `step ${i + 1}`, status, priority: "medium" })),
  ts: TS,
});
const usage = (used: number) => ({
  type: "usage.updated",
  conversation_id: "c1",
  used,
  size: 200_000,
  cost: { amount: 0.25, currency: "USD" },
  ts: TS,
});

/** Every frame the iteration yields, until it ends. */
async function collect(run: AsyncIterable<ServerMessage>): Promise<ServerMessage[]> {
  const out: ServerMessage[] = [];
  for await (const frame of run) out.push(frame);
  return out;
}

describe("thought.delta", () => {
  it("reaches handlers as the whole thought so far (offset 0), stitched with applyDelta, whatever else was negotiated", async () => {
    peer.handler = (frame, conn) =>
      frame.type === "hello" ? [ready(frame.request_id, ["thoughts"])] : defaultHandler(frame, conn);
    const c = client({ features: ["thoughts"] });
    await c.connect();
    const seen: { offset: number; text: string }[] = [];
    c.on("thought.delta", (m) => seen.push({ offset: m.offset, text: m.text }));
    const done = c.next("thought.complete");
    peer.broadcast(thought("t1", "Let me ", 0));
    peer.broadcast(thought("t1", "think 🤔", 7));
    // A correction: the thought changed from offset 3 on.
    peer.broadcast(thought("t1", " reconsider.", 3));
    peer.broadcast(thought("t2", "Another", 0));
    peer.broadcast(thoughtComplete("t1", "Let reconsider."));
    expect((await done).text).toBe("Let reconsider.");
    expect(seen).toEqual([
      { offset: 0, text: "Let me " },
      { offset: 0, text: "Let me think 🤔" },
      { offset: 0, text: "Let reconsider." },
      { offset: 0, text: "Another" },
    ]);
  });

  it("a missed one re-opens the conversation once; the snapshot's unfinished thoughts are where later deltas continue", async () => {
    peer.handler = (frame, conn) => {
      if (frame.type === "hello") return [ready(frame.request_id, ["delta.append", "thoughts"])];
      if (frame.type === "conversation.open" && frame.request_id === undefined)
        return [
          emptyHistory("c1", {
            thoughts: [
              { thought_id: "t0", run_id: "run1", text: "Done before.", complete: true },
              { thought_id: "t1", run_id: "run1", text: "First, the plan", complete: false },
            ],
          }),
          thought("t1", ".", 15),
        ];
      return defaultHandler(frame, conn);
    };
    const c = client({ features: ["delta.append", "thoughts"] });
    await c.connect();
    const invalid: unknown[] = [];
    c.onInvalidFrame((f) => invalid.push(f));
    const texts: string[] = [];
    c.on("thought.delta", (m) => texts.push(m.text));
    const repaired = c.next("thought.delta", (m) => m.text === "First, the plan.");
    peer.broadcast(thought("t1", "First", 0));
    // ", the " (offset 5) is lost; the next two lie beyond the thought.
    peer.broadcast(thought("t1", "plan", 11));
    peer.broadcast(thought("t1", " here", 15));
    await repaired;
    expect(texts).toEqual(["First", "First, the plan."]);
    expect(invalid).toEqual([]);
    const opens = peer.connections[0]!.received.filter((f) => f.type === "conversation.open");
    expect(opens).toEqual([{ type: "conversation.open", conversation_id: "c1" }]);
  });
});

describe("chat() with activity and thoughts", () => {
  it("yields the run's thoughts (whole), plan and the conversation's usage; not another run's", async () => {
    peer.handler = (frame, conn) => {
      if (frame.type === "hello") return [ready(frame.request_id, ["activity", "thoughts"])];
      if (frame.type !== "chat.send") return defaultHandler(frame, conn);
      return [
        { type: "run.accepted", conversation_id: "c1", run_id: "run1", request_id: frame.request_id, ts: TS },
        thought("t1", "Hmm", 0),
        thought("t1", ", yes", 3),
        thoughtComplete("t1", "Hmm, yes"),
        // Another run's (a stale frame): not this run's.
        thought("tx", "elsewhere", 0, "run0"),
        plan("run0", ["pending"]),
        plan("run1", ["in_progress", "pending"]),
        {
          type: "message.start",
          conversation_id: "c1",
          run_id: "run1",
          message_id: "m1",
          role: "assistant",
          ts: TS,
        },
        plan("run1", ["completed", "in_progress"]),
        {
          type: "message.complete",
          conversation_id: "c1",
          message_id: "m1",
          role: "assistant",
          text: "Ok",
          ts: TS,
        },
        usage(1234),
        { type: "run.finished", conversation_id: "c1", run_id: "run1", status: "completed", ts: TS },
        usage(5678),
      ];
    };
    const c = client({ features: ["activity", "thoughts"] });
    await c.connect();
    const frames = await collect(c.chat("c1", "Go"));
    expect(frames.map((f) => f.type)).toEqual([
      "run.accepted",
      "thought.delta",
      "thought.delta",
      "thought.complete",
      "plan.updated",
      "message.start",
      "plan.updated",
      "message.complete",
      "usage.updated",
      "run.finished",
    ]);
    expect(frames.filter((f) => f.type === "thought.delta").map((f) => f.text)).toEqual(["Hmm", "Hmm, yes"]);
    expect(
      frames.filter((f) => f.type === "plan.updated").map((f) => f.entries.map((e) => e.status)),
    ).toEqual([
      ["in_progress", "pending"],
      ["completed", "in_progress"],
    ]);
    expect(frames.find((f) => f.type === "usage.updated")).toMatchObject({ used: 1234, size: 200_000 });
  });
});

describe("features", () => {
  it("the default asks for activity, not thoughts (opt-in: it can be the bulk of a run's bytes)", async () => {
    expect(DEFAULT_FEATURES).toContain("activity");
    expect(DEFAULT_FEATURES).not.toContain("thoughts");
  });

  it("getTool sends tool.get and resolves with the tool.event that answers it", async () => {
    peer.handler = (frame, conn) => {
      if (frame.type === "hello") return [ready(frame.request_id, ["activity"])];
      if (frame.type === "tool.get")
        return [
          {
            type: "tool.event",
            conversation_id: frame.conversation_id,
            tool_call_id: frame.tool_call_id,
            tool_name: "edit",
            status: "completed",
            kind: "edit",
            content: [{ type: "text", text: "ok", truncated: false }],
            request_id: frame.request_id,
            ts: TS,
          },
        ];
      return defaultHandler(frame, conn);
    };
    const c = client({ features: ["activity"] });
    await c.connect();
    const event = await c.getTool("c1", "call-1");
    expect(event).toMatchObject({
      tool_call_id: "call-1",
      kind: "edit",
      content: [{ type: "text", text: "ok" }],
    });
    expect(peer.connections[0]!.received.find((f) => f.type === "tool.get")).toMatchObject({
      conversation_id: "c1",
      tool_call_id: "call-1",
    });
  });
});
