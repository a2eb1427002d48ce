// The thoughts extension (docs/protocol.md, "Extension: thinking"): the agent's thinking streams as
// append deltas to thoughts connections only, ends when the agent moves on, is listed for the active
// run in conversation.history, replayed by resume, bounded per thought and per run, and a connection
// without the feature gets v1 byte for byte.
import {
  applyDelta,
  FEATURE_DELTA_APPEND,
  FEATURE_RESUME,
  FEATURE_THOUGHTS,
  LIMITS,
  type ServerMessage,
  type ServerMessageOf,
} from "@pheby/protocol";
import { afterEach, describe, expect, it } from "vitest";
import { SIM_THOUGHT, SIM_THOUGHT_ANSWER } from "../src/agent/simulator/index.js";
import type { TurnResult, TurnSink } from "../src/index.js";
import {
  createConversation,
  RawClient,
  scriptedBackend,
  send,
  startServer,
  type TestServer,
  type TestServerOptions,
} from "./helpers.js";

type ThoughtDelta = ServerMessageOf<"thought.delta">;
type ThoughtComplete = ServerMessageOf<"thought.complete">;

const THOUGHTS = [FEATURE_THOUGHTS];
const pause = (ms = 2) => new Promise((r) => setTimeout(r, ms));

/** One step of a scripted turn: thinking, answer text, a tool call, or waiting for a gate. */
type Step = { think: string } | { say: string } | { tool: string } | { gate: Promise<void> };

/** A backend whose turn `text` plays `scripts[text]`, pausing between steps so each is its own delta. */
function thinkingBackend(scripts: Record<string, Step[]>) {
  return scriptedBackend("thinking", async (input, sink: TurnSink): Promise<TurnResult> => {
    for (const step of scripts[input.text] ?? []) {
      if ("think" in step) sink.thought(step.think);
      else if ("say" in step) sink.text(step.say);
      else if ("tool" in step) {
        sink.toolStart({ toolCallId: step.tool, toolName: "shell" });
        sink.toolEnd({ toolCallId: step.tool, status: "completed" });
      } else await step.gate;
      await pause();
    }
    return { status: "completed" };
  });
}

let ts: TestServer | undefined;
afterEach(async () => {
  await ts?.cleanup();
  ts = undefined;
});

async function serve(scripts: Record<string, Step[]>, options: TestServerOptions = {}) {
  ts = await startServer({ agent: thinkingBackend(scripts), deltaIntervalMs: 0, ...options });
  return ts;
}

const thoughtFrames = (c: RawClient) =>
  c.frames.filter((f) => f.type === "thought.delta" || f.type === "thought.complete") as Array<
    ThoughtDelta | ThoughtComplete
  >;
const deltasOf = (c: RawClient, thoughtId?: string) =>
  c.frames.filter(
    (f): f is ThoughtDelta =>
      f.type === "thought.delta" && (thoughtId === undefined || f.thought_id === thoughtId),
  );
const completes = (c: RawClient) =>
  c.frames.filter((f): f is ThoughtComplete => f.type === "thought.complete");

/** The thought after each delta, applying the protocol's rule from an empty thought. */
function stitch(ds: readonly ThoughtDelta[]): string[] {
  let thought = "";
  return ds.map((d) => {
    thought = applyDelta(thought, d);
    return thought;
  });
}

describe("thought.delta and thought.complete", () => {
  it("stream as append deltas (UTF-16 offsets) and end before the answer; v1 and delta.append peers see the same", async () => {
    await serve({
      go: [{ think: "Let me " }, { think: "think 🤔" }, { think: " hard." }, { say: "Answer." }],
    });
    const a = await RawClient.connect(ts!.wsUrl, { features: THOUGHTS });
    const b = await RawClient.connect(ts!.wsUrl, { features: [FEATURE_DELTA_APPEND, FEATURE_THOUGHTS] });
    const id = await createConversation(a);
    const runId = await send(a, id, "go");
    const frames = await a.run(runId);
    await b.nextAny((f) => f.type === "run.finished");

    const ds = deltasOf(a);
    expect(ds.map((d) => [d.offset, d.text])).toEqual([
      [0, "Let me "],
      [7, "think 🤔"],
      [15, " hard."], // "Let me think 🤔" is 15 UTF-16 code units
    ]);
    expect(stitch(ds)).toEqual(["Let me ", "Let me think 🤔", "Let me think 🤔 hard."]);
    const [complete] = completes(a);
    expect(complete).toMatchObject({
      conversation_id: id,
      run_id: runId,
      thought_id: ds[0]!.thought_id,
      text: "Let me think 🤔 hard.",
    });
    expect(ds.every((d) => d.run_id === runId && d.thought_id === complete!.thought_id)).toBe(true);
    // The thought ends before the answer's first delta, and the answer never contains it.
    const types = frames.map((f) => f.type);
    expect(types.indexOf("thought.complete")).toBeLessThan(types.indexOf("message.delta"));
    expect(types.lastIndexOf("thought.delta")).toBeLessThan(types.indexOf("thought.complete"));
    expect(frames.find((f) => f.type === "message.complete")).toMatchObject({ text: "Answer." });
    // A thought's deltas do not depend on delta.append.
    expect(thoughtFrames(b)).toEqual(thoughtFrames(a));
    a.close();
    b.close();
  });

  it("a tool call ends a thought and thinking after it is a new one; the turn's end completes the last", async () => {
    await serve({
      go: [{ think: "First." }, { tool: "t1" }, { think: "Second." }, { say: "Done." }, { think: "Third." }],
    });
    const a = await RawClient.connect(ts!.wsUrl, { features: THOUGHTS });
    const id = await createConversation(a);
    const runId = await send(a, id, "go");
    const frames = await a.run(runId);
    const done = completes(a);
    expect(done.map((c) => c.text)).toEqual(["First.", "Second.", "Third."]);
    expect(new Set(done.map((c) => c.thought_id)).size).toBe(3);
    const order = frames
      .filter((f) => f.type !== "thought.delta")
      .map((f) => (f.type === "thought.complete" ? `thought:${f.text}` : f.type));
    expect(order).toEqual([
      "message.start",
      "thought:First.",
      "tool.event",
      "tool.event",
      "thought:Second.",
      "message.delta",
      "thought:Third.",
      "message.complete",
      "run.finished",
    ]);
    a.close();
  });

  it("coalesce with the message deltas' window, the complete carrying the tail", async () => {
    await serve(
      { go: [{ think: "a" }, { think: "b" }, { think: "c" }, { think: "d" }, { say: "ok" }] },
      { deltaIntervalMs: 60_000 },
    );
    const a = await RawClient.connect(ts!.wsUrl, { features: THOUGHTS });
    const id = await createConversation(a);
    await a.run(await send(a, id, "go"));
    // The first chunk goes out at once; the rest wait for a window that never comes before the end.
    expect(deltasOf(a).map((d) => d.text)).toEqual(["a"]);
    expect(completes(a).map((c) => c.text)).toEqual(["abcd"]);
    a.close();
  });
});

describe("history and joining mid-thought", () => {
  it("history lists the active run's thoughts; a connection's first delta of a thought is offset 0 with all of it", async () => {
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    await serve({
      go: [
        { think: "Done thinking." },
        { tool: "t1" },
        { think: "Still " },
        { think: "going" },
        { gate },
        { think: "!" },
      ],
    });
    const a = await RawClient.connect(ts!.wsUrl, { features: THOUGHTS });
    const id = await createConversation(a);
    const runId = await send(a, id, "go");
    await a.waitFor((f) => f.type === "thought.delta" && f.text === "going", "second chunk");

    const late = await RawClient.connect(ts!.wsUrl, { features: THOUGHTS });
    const v1 = await RawClient.connect(ts!.wsUrl);
    const history = await late.ok({ type: "conversation.open", conversation_id: id }, "conversation.history");
    const first = completes(a)[0];
    const second = deltasOf(a).at(-1);
    expect(history.thoughts).toEqual([
      { thought_id: first!.thought_id, run_id: runId, text: "Done thinking.", complete: true },
      { thought_id: second!.thought_id, run_id: runId, text: "Still going", complete: false },
    ]);
    const plain = await v1.ok({ type: "conversation.open", conversation_id: id }, "conversation.history");
    expect(plain).not.toHaveProperty("thoughts");

    open();
    await a.run(runId);
    await late.nextAny((f) => f.type === "run.finished");
    expect(deltasOf(late).map((d) => [d.offset, d.text])).toEqual([[0, "Still going!"]]);
    expect(deltasOf(a, second!.thought_id).at(-1)).toMatchObject({ offset: 11, text: "!" });
    expect(completes(late).map((c) => c.text)).toEqual(["Still going!"]);
    const after = await late.ok({ type: "conversation.open", conversation_id: id }, "conversation.history");
    expect(after.thoughts).toEqual([]); // finished runs' thoughts are not in the snapshot
    for (const c of [a, late, v1]) c.close();
  });
});

describe("limits", () => {
  const x = (n: number) => "x".repeat(n);

  it.each([
    [LIMITS.thoughtChars, LIMITS.thoughtChars],
    [LIMITS.thoughtChars + 1, LIMITS.thoughtChars],
  ])("a thought of %i characters is sent as %i", async (n, kept) => {
    // In two chunks, the second crossing the limit.
    await serve({ go: [{ think: x(1_000) }, { think: x(n - 1_000) }, { say: "ok" }] });
    const a = await RawClient.connect(ts!.wsUrl, { features: THOUGHTS });
    const id = await createConversation(a);
    await a.run(await send(a, id, "go"));
    expect(completes(a).map((c) => c.text.length)).toEqual([kept]);
    expect(stitch(deltasOf(a)).at(-1)).toHaveLength(kept);
    a.close();
  });

  it("counts characters, not UTF-16 units, and never splits a surrogate pair", async () => {
    const emoji = "🤔";
    await serve({
      whole: [{ think: x(LIMITS.thoughtChars - 1) + emoji }, { say: "ok" }],
      cut: [{ think: x(LIMITS.thoughtChars) + emoji + emoji }, { say: "ok" }],
    });
    const a = await RawClient.connect(ts!.wsUrl, { features: THOUGHTS });
    const id = await createConversation(a);
    await a.run(await send(a, id, "whole"));
    await a.run(await send(a, id, "cut"));
    expect(completes(a).map((c) => c.text)).toEqual([
      x(LIMITS.thoughtChars - 1) + emoji,
      x(LIMITS.thoughtChars),
    ]);
    a.close();
  });

  it("a run's thoughts stop at 256,000 characters: the crossing thought is cut, later ones are not sent", async () => {
    const four = (n: number) => [1, 2, 3, 4].flatMap((i) => [{ think: x(n) }, { tool: `t${i}` }]);
    await serve({
      exact: [...four(LIMITS.thoughtChars), { think: "never" }, { say: "ok" }],
      crossing: [
        ...four(LIMITS.thoughtChars - 1),
        { think: "abcdef" },
        { tool: "t5" },
        { think: "never" },
        { say: "ok" },
      ],
    });
    const a = await RawClient.connect(ts!.wsUrl, { features: THOUGHTS });
    const id = await createConversation(a);
    await a.run(await send(a, id, "exact"));
    expect(completes(a).map((c) => c.text.length)).toEqual([64_000, 64_000, 64_000, 64_000]);
    const before = completes(a).length;
    await a.run(await send(a, id, "crossing"));
    // 4 × 63,999 = 255,996: room for 4 more characters.
    const texts = completes(a)
      .slice(before)
      .map((c) => c.text);
    expect(texts.map((t) => t.length)).toEqual([63_999, 63_999, 63_999, 63_999, 4]);
    expect(texts.at(-1)).toBe("abcd");
    expect(texts.join("")).toHaveLength(LIMITS.thoughtCharsPerRun);
    expect(JSON.stringify(a.frames)).not.toContain("never");
    expect(JSON.stringify(a.frames)).not.toContain("abcde");
    a.close();
  });
});

describe("resume", () => {
  const seqOf = (f: ServerMessage) => (f as { seq?: number }).seq ?? Number.NaN;

  it("replays a thought mid-stream as one collapsed delta (offset 0, all of it), then continues live", async () => {
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    await serve({
      go: [{ think: "one " }, { think: "two " }, { think: "three" }, { gate }, { think: "!" }, { say: "ok" }],
    });
    const features = [FEATURE_RESUME, FEATURE_THOUGHTS];
    const phone = await RawClient.connect(ts!.wsUrl, { features });
    const id = await createConversation(phone);
    const history = await phone.ok(
      { type: "conversation.open", conversation_id: id },
      "conversation.history",
    );
    const since = history.seq!;
    const runId = await send(phone, id, "go");
    await phone.waitFor((f) => f.type === "thought.delta" && f.text === "three", "three");
    phone.close();

    const back = await RawClient.connect(ts!.wsUrl, { features });
    back.send({ type: "conversation.open", conversation_id: id, since_seq: since, request_id: "r-open" });
    const resumed = await back.next("conversation.resumed");
    await back.nextAny((f) => seqOf(f) === resumed.to_seq);
    const replayed = back.frames.filter((f) => seqOf(f) > since && seqOf(f) <= resumed.to_seq);
    expect(replayed.map((f) => f.type)).toEqual(["run.accepted", "message.start", "thought.delta"]);
    expect(replayed[2]).toMatchObject({ run_id: runId, offset: 0, text: "one two three" });
    // The collapsed delta stands for the last one it replaces.
    expect(seqOf(replayed[2]!)).toBe(resumed.to_seq);

    open();
    await back.nextAny((f) => f.type === "run.finished");
    expect(stitch(deltasOf(back))).toEqual(["one two three", "one two three!"]);
    expect(deltasOf(back).at(-1)).toMatchObject({ offset: 13, text: "!" });
    expect(completes(back).map((c) => c.text)).toEqual(["one two three!"]);
    back.close();
  });

  it("a resume connection without thoughts is replayed none of them", async () => {
    await serve({ go: [{ think: "hidden" }, { say: "ok" }] });
    const phone = await RawClient.connect(ts!.wsUrl, { features: [FEATURE_RESUME] });
    const id = await createConversation(phone);
    await phone.run(await send(phone, id, "go"));
    phone.send({ type: "conversation.open", conversation_id: id, since_seq: 0, request_id: "r-open" });
    const resumed = await phone.next("conversation.resumed");
    await phone.nextAny((f) => f.type === "run.finished" && seqOf(f) === resumed.to_seq);
    expect(JSON.stringify(phone.frames)).not.toContain("hidden");
    phone.close();
  });
});

describe("v1 parity", () => {
  it("a connection without thoughts gets the thoughts connection's frames minus thoughts, byte for byte", async () => {
    await serve({
      go: [{ think: "Hmm 🤔" }, { say: "Part one. " }, { think: "More." }, { tool: "t1" }, { say: "Two." }],
    });
    const thinker = await RawClient.connect(ts!.wsUrl, { features: THOUGHTS });
    const v1 = await RawClient.connect(ts!.wsUrl);
    const id = await createConversation(thinker);
    const runId = await send(thinker, id, "go");
    await thinker.run(runId);
    await v1.nextAny((f) => f.type === "run.finished");
    for (const c of [thinker, v1]) {
      c.send({ type: "conversation.open", conversation_id: id, request_id: "same" });
      await c.next("conversation.history");
    }
    const expected = thinker.raw
      .filter((r) => !/^\{"type":"(ready|conversation\.created|thought\.delta|thought\.complete)"/.test(r))
      .map((r) => {
        const f = JSON.parse(r) as Record<string, unknown>;
        if (f.type === "conversation.history") delete f.thoughts;
        if (f.type === "run.accepted") delete f.request_id;
        return JSON.stringify(f);
      });
    expect(v1.raw.slice(1)).toEqual(expected);
    expect(completes(thinker)).toHaveLength(2);
    thinker.close();
    v1.close();
  });
});

describe("the simulator's /sim think", () => {
  it("thinks word by word before its answer; /sim think N thinks N characters (64,000 kept); a bad N fails", async () => {
    ts = await startServer({ deltaIntervalMs: 0 });
    const a = await RawClient.connect(ts.wsUrl, { features: THOUGHTS });
    const id = await createConversation(a);
    const frames = await a.run(await send(a, id, "/sim think"));
    expect(completes(a).map((c) => c.text)).toEqual([SIM_THOUGHT]);
    expect(deltasOf(a).length).toBeGreaterThan(5);
    expect(stitch(deltasOf(a)).at(-1)).toBe(SIM_THOUGHT);
    expect(frames.find((f) => f.type === "message.complete")).toMatchObject({ text: SIM_THOUGHT_ANSWER });

    await a.run(await send(a, id, "/sim think 70000"));
    expect(completes(a).at(-1)?.text).toHaveLength(LIMITS.thoughtChars);
    const bad = await a.run(await send(a, id, "/sim think 0"));
    expect(bad.at(-1)).toMatchObject({ type: "run.finished", status: "failed" });
    a.close();
  });
});
