// Thinning the v1 copies of a long answer (docs/performance.md, "Thinning v1 deltas"): once a
// cumulative delta's frame no longer fits deflate's window, a connection without delta.append is
// sent fewer of them, each still a valid cumulative draft; delta.append connections get every
// delta; a held delta goes out on the server's clock, before its conversation's next event, and
// never after its message.complete. The agent is driven step by step and the server's clock is a
// manual one, so which delta reaches whom does not depend on timing.
import {
  applyDelta,
  FEATURE_DELTA_APPEND,
  FEATURE_RESUME,
  type ServerMessage,
  type ServerMessageOf,
} from "@pheby/protocol";
import { messageIdOf } from "@pheby/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { TurnResult, TurnSink } from "../src/agent/port.js";
import { longText } from "../src/agent/simulator/index.js";
import { THIN_ABOVE_BYTES, THIN_MAX_INTERVAL_MS } from "../src/outbox/thinning.js";
import {
  createConversation,
  RawClient,
  scriptedBackend,
  send,
  startServer,
  type TestServer,
  type TestServerOptions,
} from "./helpers.js";
import { ManualClock } from "./manual-clock.js";

type Delta = ServerMessageOf<"message.delta">;
type Complete = ServerMessageOf<"message.complete">;

/** A long answer in 2,500-character chunks: its v1 frames cross the threshold at about the 14th. */
const ANSWER = longText(50_000);
const CHUNKS = ANSWER.match(/[\s\S]{1,2500}/g)!;

/** A turn the test drives: its sink, and how to end it. */
interface Turn {
  sink: TurnSink;
  end(result: TurnResult): void;
}

/** A backend whose turns wait for the test: `turn(conversationId)` hands over the next one. */
function drivenBackend() {
  const ready = new Map<string, (turn: Turn) => void>();
  const started = new Map<string, Promise<Turn>>();
  const slot = (id: string) => {
    if (!started.has(id)) started.set(id, new Promise((resolve) => ready.set(id, resolve)));
    return started.get(id)!;
  };
  const backend = scriptedBackend(
    "driven",
    (input, sink, signal) =>
      new Promise<TurnResult>((end) => {
        signal.addEventListener("abort", () => end({ status: "cancelled" }));
        void slot(input.conversationId);
        ready.get(input.conversationId)!({ sink, end });
      }),
  );
  return {
    backend,
    /** The conversation's current turn, once the engine has started it; the next call waits for the next turn. */
    async turn(conversationId: string): Promise<Turn> {
      const turn = await slot(conversationId);
      started.delete(conversationId);
      return turn;
    },
  };
}

const deltasOf = (c: RawClient, runId: string): Delta[] =>
  c.frames.filter(
    (m): m is Delta => m.type === "message.delta" && m.message_id === messageIdOf(c.frames, runId),
  );

/** The draft an append client holds for a run, stitched from its deltas by the protocol's rule. */
const draftOf = (c: RawClient, runId: string): string =>
  deltasOf(c, runId).reduce((draft, d) => applyDelta(draft, d), "");

/** Every frame sent to `c` before this has arrived (the server answers a ping after them). */
const settled = (c: RawClient) => c.ok({ type: "ping" }, "pong");

/** The bytes of a v1 delta frame of `text`, measured on one the client received. */
function v1Bytes(c: RawClient, text: string): number {
  const i = c.frames.findIndex((m) => m.type === "message.delta");
  const first = c.frames[i] as Delta;
  const envelope = Buffer.byteLength(c.raw[i]!) - Buffer.byteLength(JSON.stringify(first.text));
  return envelope + Buffer.byteLength(JSON.stringify(text));
}

/** Each v1 delta strictly extends the one before; the last is a prefix of (or equal to) the complete text. */
function expectCumulative(deltas: readonly Delta[], complete: Complete) {
  let previous = "";
  for (const d of deltas) {
    expect(d.offset).toBeUndefined();
    expect(d.text.length).toBeGreaterThan(previous.length);
    expect(d.text.startsWith(previous)).toBe(true);
    previous = d.text;
  }
  expect(complete.text.startsWith(previous)).toBe(true);
}

let ts: TestServer | undefined;
afterEach(async () => {
  await ts?.cleanup();
  ts = undefined;
});

/** A server on a manual clock, a v1 and a delta.append connection, and a driven agent. */
async function setup(options: TestServerOptions = {}) {
  const clock = new ManualClock(Date.parse("2026-12-01T12:00:00Z"));
  const driven = drivenBackend();
  ts = await startServer({ agent: driven.backend, clock, deltaIntervalMs: 1, ...options });
  const v1 = await RawClient.connect(ts.wsUrl);
  const append = await RawClient.connect(ts.wsUrl, { features: [FEATURE_DELTA_APPEND] });
  const start = async (conversationId?: string) => {
    const conversation = conversationId ?? (await createConversation(v1));
    const runId = await send(v1, conversation, "go");
    return { conversation, runId, turn: await driven.turn(conversation) };
  };
  return { clock, v1, append, start };
}

/** Stream `chunks` one by one, each once the append connection has its delta (so each is its own delta). */
async function stream(turn: Turn, append: RawClient, runId: string, chunks: readonly string[]) {
  for (const chunk of chunks) {
    const text = draftOf(append, runId) + chunk;
    turn.sink.text(chunk);
    await append.next("message.delta", () => draftOf(append, runId) === text);
  }
  return draftOf(append, runId);
}

const completeOf = (c: RawClient, runId: string) =>
  c.next("message.complete", (m) => m.message_id === messageIdOf(c.frames, runId));

describe("v1 copies of a long answer", () => {
  it("past deflate's window a v1 connection gets fewer deltas, each a valid cumulative draft; delta.append gets every one", async () => {
    const { clock, v1, append, start } = await setup();
    const { runId, turn } = await start();
    const streamed = await stream(turn, append, runId, CHUNKS.slice(0, 16));
    await settled(v1);
    const cumulative = CHUNKS.slice(0, 16).map((_, i) => CHUNKS.slice(0, i + 1).join(""));
    const fits = cumulative.filter((t) => v1Bytes(v1, t) <= THIN_ABOVE_BYTES);
    expect(fits.length).toBeGreaterThan(2);
    expect(fits.length).toBeLessThan(cumulative.length);
    // The clock has not moved: everything past the window is held back from v1, nothing before it.
    expect(deltasOf(v1, runId).map((d) => d.text)).toEqual(fits);

    // No new chunk comes, the gap passes: the held draft goes out on the timer.
    clock.advance(THIN_MAX_INTERVAL_MS);
    expect((await v1.next("message.delta", (d) => d.text === streamed)).text).toBe(streamed);

    await stream(turn, append, runId, CHUNKS.slice(16));
    turn.end({ status: "completed" });
    const complete = await completeOf(v1, runId);
    await completeOf(append, runId);
    expect(complete.text).toBe(ANSWER);
    const v1Deltas = deltasOf(v1, runId);
    expectCumulative(v1Deltas, complete);
    // The delta held at the end is superseded by message.complete, not sent before it.
    expect(v1Deltas.at(-1)!.text.length).toBeLessThan(ANSWER.length);
    expect(deltasOf(append, runId)).toHaveLength(CHUNKS.length);
    expect(draftOf(append, runId)).toBe(ANSWER);
    expect(v1Deltas.length).toBeLessThan(CHUNKS.length);

    // Nothing of that message reaches v1 after its message.complete, however much time passes.
    const after = v1.frames.length;
    clock.advance(10 * THIN_MAX_INTERVAL_MS);
    await settled(v1);
    expect(v1.frames.slice(after).filter((m) => m.type === "message.delta")).toEqual([]);
  });

  it("a held delta goes out before its conversation's next event (a tool call), not before another conversation's", async () => {
    const { clock, v1, append, start } = await setup();
    const a = await start();
    const b = await start();
    const heldA = await stream(a.turn, append, a.runId, CHUNKS.slice(0, 16));
    const heldB = await stream(b.turn, append, b.runId, CHUNKS.slice(0, 16));
    await settled(v1);
    // B's deltas did not release A's held draft.
    expect(deltasOf(v1, a.runId).at(-1)!.text).not.toBe(heldA);
    a.turn.sink.toolStart({ toolCallId: "t1", toolName: "read" });
    const tool = await v1.next("tool.event", (m) => m.run_id === a.runId);
    const before = v1.frames.slice(0, v1.frames.indexOf(tool));
    const lastA = before.filter(
      (m): m is Delta => m.type === "message.delta" && m.message_id === messageIdOf(v1.frames, a.runId),
    );
    expect(lastA.at(-1)!.text).toBe(heldA);
    await settled(v1);
    expect(deltasOf(v1, b.runId).at(-1)!.text).not.toBe(heldB);
    // B's own gap still releases B's.
    clock.advance(THIN_MAX_INTERVAL_MS);
    await v1.next(
      "message.delta",
      (d) => d.message_id === messageIdOf(v1.frames, b.runId) && d.text === heldB,
    );
    a.turn.end({ status: "completed" });
    b.turn.end({ status: "completed" });
    for (const { runId } of [a, b]) {
      const complete = await completeOf(v1, runId);
      expect(complete.text).toBe(CHUNKS.slice(0, 16).join(""));
      expectCumulative(deltasOf(v1, runId), complete);
    }
  });

  for (const ending of ["cancelled", "failed"] as const) {
    it(`a run ${ending} while a delta is held: message.complete carries the text, nothing follows it, the next run starts afresh`, async () => {
      const { clock, v1, append, start } = await setup();
      const first = await start();
      const streamed = await stream(first.turn, append, first.runId, CHUNKS.slice(0, 16));
      if (ending === "cancelled") {
        await v1.ok(
          { type: "run.cancel", conversation_id: first.conversation, run_id: first.runId },
          "run.finished",
        );
      } else {
        first.turn.end({ status: "failed", error: "the agent gave up" });
      }
      const complete = await completeOf(v1, first.runId);
      expect(complete.text).toBe(streamed);
      expectCumulative(deltasOf(v1, first.runId), complete);
      expect(await v1.next("run.finished", (m) => m.run_id === first.runId)).toMatchObject({
        status: ending,
      });
      const after = v1.frames.length;
      clock.advance(10 * THIN_MAX_INTERVAL_MS);
      await settled(v1);
      expect(v1.frames.slice(after).some((m) => m.type === "message.delta")).toBe(false);

      // The same conversation's next answer: its first delta goes out at once, the clock still stopped.
      const next = await start(first.conversation);
      next.turn.sink.text(CHUNKS[0]!);
      expect(
        (await v1.next("message.delta", (d) => d.message_id === messageIdOf(v1.frames, next.runId))).text,
      ).toBe(CHUNKS[0]);
      next.turn.end({ status: "completed" });
      await completeOf(v1, next.runId);
    });
  }

  it("a v1 connection that resumes mid-answer is not sent the held draft a second time", async () => {
    const { clock, v1, append, start } = await setup();
    const { conversation, runId, turn } = await start();
    const resumed = await RawClient.connect(ts!.wsUrl, { features: [FEATURE_RESUME] });
    const opened = await resumed.ok(
      { type: "conversation.open", conversation_id: conversation },
      "conversation.history",
    );
    const streamed = await stream(turn, append, runId, CHUNKS.slice(0, 16));
    resumed.close();
    const again = await RawClient.connect(ts!.wsUrl, { features: [FEATURE_RESUME] });
    const reply = await again.ok(
      { type: "conversation.open", conversation_id: conversation, since_seq: opened.seq },
      "conversation.resumed",
    );
    await again.next("message.delta", (d) => d.text === streamed);
    clock.advance(THIN_MAX_INTERVAL_MS);
    await v1.next("message.delta", (d) => d.text === streamed);
    await settled(again);
    const seqs = again.frames
      .filter((m): m is Delta & { seq: number } => m.type === "message.delta")
      .map((d) => d.seq);
    expect(seqs).toHaveLength(1);
    expect(seqs[0]).toBeLessThanOrEqual(reply.to_seq);
    turn.end({ status: "completed" });
    // A resumed connection saw no message.start of this run: the append connection names its message.
    await again.next("message.complete", (m) => m.message_id === messageIdOf(append.frames, runId));
  });
});

describe("thinning off", () => {
  for (const [name, options] of [
    ["thinV1Deltas: false", { thinV1Deltas: false }],
    ["deltaIntervalMs: 0", { deltaIntervalMs: 0 }],
  ] as const) {
    it(`${name}: the v1 connection gets every delta, as the append one does`, async () => {
      const { v1, append, start } = await setup(options);
      const { runId, turn } = await start();
      await stream(turn, append, runId, CHUNKS);
      turn.end({ status: "completed" });
      const complete = await completeOf(v1, runId);
      expect(complete.text).toBe(ANSWER);
      expect(deltasOf(v1, runId).map((d) => d.text)).toEqual(
        CHUNKS.map((_, i) => CHUNKS.slice(0, i + 1).join("")),
      );
      expect(deltasOf(append, runId)).toHaveLength(CHUNKS.length);
    });
  }
});

it("the simulator's long answer on the real clock: v1 (with and without deflate) gets valid cumulative drafts, then the exact text", async () => {
  ts = await startServer({ deltaIntervalMs: 1 });
  const clients = [
    await RawClient.connect(ts.wsUrl),
    await RawClient.connect(ts.wsUrl, { perMessageDeflate: false }),
    await RawClient.connect(ts.wsUrl, { features: [FEATURE_DELTA_APPEND] }),
  ];
  const [v1] = clients;
  const runId = await send(v1!, await createConversation(v1!), "/sim long 200000");
  for (const c of clients) {
    const frames: ServerMessage[] = await c.run(runId);
    const complete = frames.find((m): m is Complete => m.type === "message.complete")!;
    expect(complete.text).toBe(longText(200_000));
    if (c === clients[2]) expect(complete.text.startsWith(draftOf(c, runId))).toBe(true);
    else expectCumulative(deltasOf(c, runId), complete);
  }
});
