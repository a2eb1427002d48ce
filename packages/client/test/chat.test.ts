// chat() (one run as an async iterable), the missed append delta's recovery and hello's feature
// list, against a scripted peer on 127.0.0.1.
import type { ServerMessage } from "@pheby/protocol";
import { FEATURE_PRIORITY, HELLO_FEATURES_SENT_MAX } from "@pheby/protocol";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PhebyClient, type PhebyClientOptions } from "../src/index.js";
import { defaultHandler, emptyHistory, type PeerConnection, ScriptedPeer, TS } from "./peer.js";

let peer: ScriptedPeer;
const clients: PhebyClient[] = [];
const client = (extra: Partial<PhebyClientOptions> = {}) => {
  const c = new PhebyClient({
    url: peer.url,
    secret: "s3cret",
    reconnect: { initialDelayMs: 5, maxDelayMs: 20 },
    ...extra,
  });
  clients.push(c);
  return c;
};
const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeEach(async () => {
  peer = await ScriptedPeer.start();
});
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await peer.close();
});

/** The hello's answer, enabling `features`. */
const ready = (request_id: unknown, features: readonly string[]) => ({
  type: "ready",
  protocol_version: 1,
  server: "pheby",
  features,
  ts: TS,
  request_id,
});
const start = (conversation_id: string, run_id: string, message_id: string) => ({
  type: "message.start",
  conversation_id,
  run_id,
  message_id,
  role: "assistant",
  ts: TS,
});
const delta = (conversation_id: string, message_id: string, text: string, offset?: number) => ({
  type: "message.delta",
  conversation_id,
  message_id,
  text,
  ...(offset === undefined ? {} : { offset }),
  ts: TS,
});
const complete = (conversation_id: string, message_id: string, text: string) => ({
  type: "message.complete",
  conversation_id,
  message_id,
  role: "assistant",
  text,
  ts: TS,
});
const finished = (conversation_id: string, run_id: string, status = "completed") => ({
  type: "run.finished",
  conversation_id,
  run_id,
  status,
  ts: TS,
});
const history = emptyHistory;

/** Every frame the iteration yields, until it ends. */
async function collect(run: AsyncIterable<ServerMessage>): Promise<ServerMessage[]> {
  const out: ServerMessage[] = [];
  for await (const frame of run) out.push(frame);
  return out;
}

/** A peer whose `chat.send` is answered by `script` (its frames, in order); `hello` enables `features`. */
function scripted(
  features: readonly string[],
  script: (send: Record<string, unknown>, conn: PeerConnection) => unknown[] | undefined,
): void {
  peer.handler = (frame, conn) => {
    if (frame.type === "hello") return [ready(frame.request_id, features)];
    if (frame.type === "chat.send") return script(frame, conn);
    return defaultHandler(frame, conn);
  };
}

describe("chat(): one run as an async iterable", () => {
  it("yields the reply, the run's frames (whole drafts) and its run.finished, then ends; another conversation's frames are not the run's", async () => {
    scripted(["delta.append"], (send) => [
      { type: "run.accepted", conversation_id: "c1", run_id: "run1", request_id: send.request_id, ts: TS },
      delta("c2", "other", "elsewhere", 0),
      start("c1", "run1", "m1"),
      delta("c1", "m1", "Hel", 0),
      delta("c1", "m1", "lo", 3),
      complete("c1", "m1", "Hello"),
      finished("c1", "run1"),
      // After the run: not the run's.
      start("c1", "run2", "m2"),
    ]);
    const c = client({ features: ["delta.append"] });
    await c.connect();
    const frames = await collect(c.chat("c1", "Hi"));
    expect(frames.map((f) => f.type)).toEqual([
      "run.accepted",
      "message.start",
      "message.delta",
      "message.delta",
      "message.complete",
      "run.finished",
    ]);
    expect(frames.filter((f) => f.type === "message.delta").map((f) => f.text)).toEqual(["Hel", "Hello"]);
    expect(peer.connections[0]!.received.find((f) => f.type === "chat.send")).toMatchObject({
      conversation_id: "c1",
      text: "Hi",
    });
    // Followed only while it ran.
    expect(c.isFollowing("c1")).toBe(false);
  });

  it("a queued send yields run.queued and the conversation's queue.changed while it waits, then its run", async () => {
    scripted(["queue"], (send, conn) => {
      const queued = [{ run_id: "run2", text: "later", position: 1 }];
      setTimeout(() => {
        for (const f of [
          { type: "queue.changed", conversation_id: "c1", queued, ts: TS },
          finished("c1", "run1"),
          { type: "queue.changed", conversation_id: "c1", queued: [], ts: TS },
          { type: "run.accepted", conversation_id: "c1", run_id: "run2", ts: TS },
          start("c1", "run2", "m2"),
          complete("c1", "m2", "Done"),
          finished("c1", "run2"),
        ])
          conn.socket.send(JSON.stringify(f));
      }, 10);
      return [
        {
          type: "run.queued",
          conversation_id: "c1",
          run_id: "run2",
          position: 1,
          request_id: send.request_id,
          ts: TS,
        },
      ];
    });
    const c = client({ features: ["queue"] });
    await c.connect();
    const frames = await collect(c.chat("c1", "later", { queue: true }));
    expect(peer.connections[0]!.received.find((f) => f.type === "chat.send")).toMatchObject({ queue: true });
    expect(frames.map((f) => f.type)).toEqual([
      "run.queued",
      "queue.changed",
      "queue.changed",
      "run.accepted",
      "message.start",
      "message.complete",
      "run.finished",
    ]);
    expect(frames.at(-1)).toMatchObject({ run_id: "run2" });
  });

  it("throws the server's error when chat.send is refused", async () => {
    scripted([], (send) => [
      { type: "error", request_id: send.request_id, error: { code: "run_active", message: "busy" }, ts: TS },
    ]);
    const c = client({ features: [] });
    await c.connect();
    await expect(collect(c.chat("c1", "Hi"))).rejects.toMatchObject({ code: "run_active" });
  });

  it("throws when the connection fails for good during the run", async () => {
    scripted([], (send) => [
      { type: "run.accepted", conversation_id: "c1", run_id: "run1", request_id: send.request_id, ts: TS },
    ]);
    const c = client({ features: [] });
    await c.connect();
    const run = collect(c.chat("c1", "Hi"));
    while (!peer.connections[0]!.received.some((f) => f.type === "chat.send")) await wait(5);
    peer.connections[0]!.socket.close(4401, "unauthorized");
    await expect(run).rejects.toMatchObject({ code: "unauthorized" });
    expect(c.state).toBe("failed");
  });

  it("without resume: a drop, then the re-open's snapshot shows the run over: it yields the snapshot and ends", async () => {
    scripted([], (send) => [
      { type: "run.accepted", conversation_id: "c1", run_id: "run1", request_id: send.request_id, ts: TS },
      start("c1", "run1", "m1"),
    ]);
    const c = client({ features: [] });
    await c.connect();
    const frames: ServerMessage[] = [];
    const run = (async () => {
      for await (const f of c.chat("c1", "Hi")) frames.push(f);
    })();
    while (frames.length < 2) await wait(5);
    peer.handler = (frame, conn) =>
      frame.type === "conversation.open"
        ? [history("c1", { request_id: frame.request_id, messages: [] })]
        : defaultHandler(frame, conn);
    peer.connections[0]!.socket.terminate();
    await run;
    expect(frames.map((f) => f.type)).toEqual(["run.accepted", "message.start", "conversation.history"]);
    // The catch-up's re-open is marked as one.
    expect(peer.connections[1]!.received[1]).toMatchObject({
      type: "conversation.open",
      conversation_id: "c1",
      request_id: expect.stringMatching(/^resync-/),
    });
  });
});

describe("chat() across a drop, with resume", () => {
  it("a send whose reply was lost goes again after the catch-up, same client_message_id, and the run goes on once", async () => {
    peer.handler = (frame, conn) => {
      if (frame.type === "hello") return [ready(frame.request_id, ["resume"])];
      if (frame.type === "chat.send") {
        // The first connection loses the reply; the second answers the repeat with the run.
        if (peer.connections.indexOf(conn) === 0) return [];
        return [
          {
            type: "run.accepted",
            conversation_id: "c1",
            run_id: "run1",
            request_id: frame.request_id,
            ts: TS,
          },
          start("c1", "run1", "m1"),
          complete("c1", "m1", "Done"),
          finished("c1", "run1"),
        ];
      }
      return defaultHandler(frame, conn);
    };
    const c = client({ features: ["resume"] });
    await c.connect();
    const run = collect(c.chat("c1", "Hi"));
    while (!peer.connections[0]!.received.some((f) => f.type === "chat.send")) await wait(5);
    peer.connections[0]!.socket.terminate();
    const frames = await run;
    expect(frames.map((f) => f.type)).toEqual([
      "run.accepted",
      "message.start",
      "message.complete",
      "run.finished",
    ]);
    const [first, again] = peer.connections.map((conn) => conn.received.find((f) => f.type === "chat.send")!);
    expect(first!.client_message_id).toMatch(/^[0-9a-f]{32}$/);
    expect(again!.client_message_id).toBe(first!.client_message_id);
    // The followed conversation was caught up before the send went again.
    expect(peer.connections[1]!.received.map((f) => f.type)).toEqual([
      "hello",
      "conversation.open",
      "chat.send",
    ]);
  });
});

describe("a missed append delta", () => {
  it("re-opens the conversation once (no request_id), takes the snapshot's run.text and continues from it; nothing is reported invalid", async () => {
    peer.handler = (frame, conn) => {
      if (frame.type === "hello") return [ready(frame.request_id, ["delta.append"])];
      if (frame.type === "conversation.open" && frame.request_id === undefined) {
        // The whole draft so far, then the stream goes on from it.
        return [
          history("c1", {
            run: {
              run_id: "run1",
              conversation_id: "c1",
              message_id: "m1",
              status: "running",
              text: "Hello, world",
              started_at: TS,
            },
          }),
          delta("c1", "m1", "!", 12),
        ];
      }
      return defaultHandler(frame, conn);
    };
    const c = client({ features: ["delta.append"] });
    await c.connect();
    const invalid: unknown[] = [];
    c.onInvalidFrame((f) => invalid.push(f));
    const texts: string[] = [];
    c.on("message.delta", (m) => texts.push(m.text));
    const snapshot = c.next("conversation.history");
    const repaired = c.next("message.delta", (m) => m.text === "Hello, world!");
    peer.broadcast(start("c1", "run1", "m1"));
    peer.broadcast(delta("c1", "m1", "Hel", 0));
    // "lo, " (offset 3) is lost; the next two are beyond the draft.
    peer.broadcast(delta("c1", "m1", "wor", 7));
    peer.broadcast(delta("c1", "m1", "ld", 10));
    expect(await snapshot).toMatchObject({ conversation_id: "c1", run: { text: "Hello, world" } });
    await repaired;
    expect(texts).toEqual(["Hel", "Hello, world!"]);
    expect(invalid).toEqual([]);
    const opens = peer.connections[0]!.received.filter((f) => f.type === "conversation.open");
    expect(opens).toEqual([{ type: "conversation.open", conversation_id: "c1" }]);
  });
});

describe("hello.features", () => {
  it("sends at most 16 names, each once, in FEATURE_PRIORITY order, unknown names after", async () => {
    const unknown = Array.from({ length: 14 }, (_, i) => `x-${i}`);
    const c = client({ features: [...unknown, ...[...FEATURE_PRIORITY].reverse(), "resume"] });
    await c.connect();
    const hello = peer.connections[0]!.received[0]!;
    expect(HELLO_FEATURES_SENT_MAX).toBe(16);
    expect(hello.features).toEqual([...FEATURE_PRIORITY, ...unknown].slice(0, 16));
  });

  it("the default asks for delta.append, resume, queue, push, activity, modes, inbox, workspaces and changes", async () => {
    const c = client();
    await c.connect();
    expect(peer.connections[0]!.received[0]!.features).toEqual([
      "delta.append",
      "resume",
      "queue",
      "push",
      "activity",
      "modes",
      "inbox",
      "workspaces",
      "changes",
    ]);
  });
});
