// The delta.append extension (docs/protocol.md, "Extension: append deltas"): negotiated in hello,
// offsets stitch to exactly the cumulative text a v1 connection sees at every step, a connection
// that joins mid-stream starts at offset 0, surrogate pairs are never split, and a connection that
// does not ask gets exactly the v1 frames.
import { applyDelta, CLOSE_CODES, FEATURE_DELTA_APPEND, LIMITS, type ServerMessageOf } from "@pheby/protocol";
import { messageIdOf } from "@pheby/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { Fanout } from "../src/outbox/fanout.js";
import { eventOf } from "../src/outbox/outbox.js";
import { FakePeer } from "./fake-peer.js";
import {
  createConversation,
  RawClient,
  SECRET,
  send,
  startServer,
  streamingBackend as streaming,
  type TestServer,
} from "./helpers.js";

type Delta = ServerMessageOf<"message.delta">;

/** Open a socket, send hello (with `features` when given) and return the client and its ready. */
async function connect(wsUrl: string, features?: unknown) {
  const c = await RawClient.open(wsUrl);
  c.send({
    type: "hello",
    secret: SECRET,
    protocol_version: 1,
    ...(features === undefined ? {} : { features }),
  });
  const ready = await c.next("ready");
  return { c, ready };
}

/** Record every raw text frame of a client, byte for byte. */
function rawFrames(c: RawClient): string[] {
  const raw: string[] = [];
  c.ws.on("message", (data) => raw.push(data.toString()));
  return raw;
}

/** The run's deltas on `c`; `named` saw its message.start (a connection that joined mid-run did not). */
function deltas(c: RawClient, runId: string, named: RawClient = c): Delta[] {
  const messageId = messageIdOf(named.frames, runId);
  return c.frames.filter((m): m is Delta => m.type === "message.delta" && m.message_id === messageId);
}

/** The draft after each delta, applying the protocol's rule from an empty draft. */
function stitch(ds: readonly Delta[]): string[] {
  let draft = "";
  return ds.map((d) => {
    draft = applyDelta(draft, d);
    return draft;
  });
}

const isLow = (c: number) => c >= 0xdc00 && c <= 0xdfff;

let ts: TestServer | undefined;
afterEach(async () => {
  await ts?.cleanup();
  ts = undefined;
});

const WORDS = Array.from({ length: 60 }, (_, i) => `word${i} `);

describe("negotiation", () => {
  it("ready lists the enabled features; unknown and repeated names are ignored", async () => {
    ts = await startServer();
    const cases: [unknown, string[]][] = [
      [[FEATURE_DELTA_APPEND], [FEATURE_DELTA_APPEND]],
      [["x-teleport", FEATURE_DELTA_APPEND, FEATURE_DELTA_APPEND], [FEATURE_DELTA_APPEND]],
      [["x-teleport"], []],
      [[], []],
    ];
    for (const [features, enabled] of cases) {
      const { c, ready } = await connect(ts.wsUrl, features);
      expect(ready.features).toEqual(enabled);
      await c.ok({ type: "ping" }, "pong");
      c.close();
    }
  });

  it("a hello without features gets exactly v1's ready (no features field)", async () => {
    ts = await startServer();
    const c = await RawClient.open(ts.wsUrl);
    const raw = rawFrames(c);
    c.send({ type: "hello", secret: SECRET, protocol_version: 1, request_id: "h" });
    await c.next("ready");
    expect(Object.keys(JSON.parse(raw[0]!))).toEqual([
      "type",
      "request_id",
      "protocol_version",
      "server",
      "ts",
    ]);
    c.close();
  });

  it("accepts 64 features of 64 characters; 65, or a 65-character name, or a non-array: unauthorized + 4401", async () => {
    ts = await startServer();
    const most = Array.from({ length: LIMITS.helloFeatures }, (_, i) =>
      `${i}`.padEnd(LIMITS.featureNameChars, "x"),
    );
    expect(most).toHaveLength(64);
    const ok = await connect(ts.wsUrl, most);
    expect(ok.ready.features).toEqual([]);
    ok.c.close();
    const bad: [unknown, string][] = [
      [[...most, "x"], "features must have at most 64 items"],
      [["x".repeat(LIMITS.featureNameChars + 1)], "features.0 must have at most 64 characters"],
      [FEATURE_DELTA_APPEND, "features must be array"],
      [[FEATURE_DELTA_APPEND, 7], "features.1 must be string"],
    ];
    for (const [features, message] of bad) {
      const c = await RawClient.open(ts.wsUrl);
      c.send({ type: "hello", secret: SECRET, protocol_version: 1, request_id: "h", features });
      const error = await c.next("error");
      expect(error).toMatchObject({
        request_id: "h",
        error: { code: "unauthorized", message: `The first frame must be a valid hello (${message})` },
      });
      expect((await c.closed).code).toBe(CLOSE_CODES.unauthorized);
    }
  });
});

describe("streaming", () => {
  it("two connections to one run: v1 gets cumulative deltas, delta.append gets offsets that stitch to them at every step", async () => {
    ts = await startServer({ agent: streaming(WORDS), deltaIntervalMs: 0 });
    const plain = (await connect(ts.wsUrl)).c;
    const append = (await connect(ts.wsUrl, [FEATURE_DELTA_APPEND])).c;
    const runId = await send(plain, await createConversation(plain), "go");
    await plain.run(runId);
    await append.run(runId);
    const cumulative = deltas(plain, runId);
    const appended = deltas(append, runId);
    expect(cumulative).toHaveLength(WORDS.length);
    expect(cumulative.map((d) => d.text)).toEqual(WORDS.map((_, i) => WORDS.slice(0, i + 1).join("")));
    expect(cumulative.every((d) => d.offset === undefined)).toBe(true);
    // Each append delta carries only its new chunk, after exactly what the client already has.
    expect(appended.map((d) => [d.offset, d.text])).toEqual(
      WORDS.map((w, i) => [WORDS.slice(0, i).join("").length, w]),
    );
    expect(stitch(appended)).toEqual(cumulative.map((d) => d.text));
    const complete = append.frames.find(
      (m) => m.type === "message.complete" && m.message_id === messageIdOf(append.frames, runId),
    );
    expect(stitch(appended).at(-1)).toBe((complete as ServerMessageOf<"message.complete">).text);
    plain.close();
    append.close();
  });

  it("a connection without features gets exactly the v1 frames, byte for byte", async () => {
    ts = await startServer({ agent: streaming(WORDS.slice(0, 3)), deltaIntervalMs: 0 });
    const plain = (await connect(ts.wsUrl)).c;
    const raw = rawFrames(plain);
    // An append connection on the same run must not change what the v1 connection gets.
    const append = (await connect(ts.wsUrl, [FEATURE_DELTA_APPEND])).c;
    const runId = await send(plain, await createConversation(plain), "go");
    await plain.run(runId);
    const sent = raw.filter((r) => r.includes('"message.delta"'));
    expect(sent).toHaveLength(3);
    for (const [i, frame] of sent.entries()) {
      const ts = (JSON.parse(frame) as Delta).ts;
      const conversationId = (JSON.parse(frame) as Delta).conversation_id;
      expect(frame).toBe(
        `{"type":"message.delta","conversation_id":"${conversationId}","message_id":"draft-${runId}","text":${JSON.stringify(WORDS.slice(0, i + 1).join(""))},"ts":"${ts}"}`,
      );
    }
    plain.close();
    append.close();
  });

  it("a connection that authenticates mid-stream gets offset 0 and the whole draft first, then appends", async () => {
    let open!: () => void;
    const gate = { after: 5, open: new Promise<void>((r) => (open = r)) };
    ts = await startServer({ agent: streaming(WORDS.slice(0, 10), { gate }), deltaIntervalMs: 0 });
    const early = (await connect(ts.wsUrl, [FEATURE_DELTA_APPEND])).c;
    const runId = await send(early, await createConversation(early), "go");
    await early.next("message.delta", (d) => d.text === WORDS[4]);
    const late = (await connect(ts.wsUrl, [FEATURE_DELTA_APPEND])).c;
    open();
    await early.run(runId);
    await late.run(runId);
    const first = deltas(late, runId, early);
    expect(first[0]).toMatchObject({ offset: 0, text: WORDS.slice(0, 6).join("") });
    expect(first.slice(1).every((d) => d.offset! > 0 && d.text.length === WORDS[6]!.length)).toBe(true);
    expect(stitch(first).at(-1)).toBe(WORDS.slice(0, 10).join(""));
    // The early connection was never sent the whole text again.
    expect(deltas(early, runId).filter((d) => d.offset === 0)).toHaveLength(1);
    early.close();
    late.close();
  });

  it("an emoji stream cut inside surrogate pairs: no delta starts inside a pair, and it stitches exactly", async () => {
    // 3 UTF-16 units per chunk: every other chunk ends with a lone high surrogate.
    const text = "😀👍🎉a🚀b🌍".repeat(8);
    const chunks = text.match(/[\s\S]{1,3}/g)!;
    expect(chunks.some((c) => isLow(c.charCodeAt(0)))).toBe(true);
    ts = await startServer({ agent: streaming(chunks), deltaIntervalMs: 0 });
    const plain = (await connect(ts.wsUrl)).c;
    const append = (await connect(ts.wsUrl, [FEATURE_DELTA_APPEND])).c;
    const runId = await send(plain, await createConversation(plain), "go");
    await plain.run(runId);
    await append.run(runId);
    const appended = deltas(append, runId);
    expect(appended).toHaveLength(chunks.length);
    expect(appended.slice(1).every((d) => d.offset! > 0)).toBe(true);
    for (const d of appended) expect(isLow(d.text.charCodeAt(0)), JSON.stringify(d)).toBe(false);
    expect(stitch(appended)).toEqual(deltas(plain, runId).map((d) => d.text));
    expect(stitch(appended).at(-1)).toBe(text);
    plain.close();
    append.close();
  });

  it("coalesced deltas: each starts where the previous ended and stitches to a prefix of the final text", async () => {
    ts = await startServer({ agent: streaming(WORDS), deltaIntervalMs: 10 });
    const append = (await connect(ts.wsUrl, [FEATURE_DELTA_APPEND])).c;
    const runId = await send(append, await createConversation(append), "go");
    await append.run(runId);
    const appended = deltas(append, runId);
    const drafts = stitch(appended);
    for (const [i, d] of appended.entries()) {
      expect(d.offset).toBe(i === 0 ? 0 : drafts[i - 1]!.length);
      expect(WORDS.join("").startsWith(drafts[i]!)).toBe(true);
    }
    append.close();
  });
});

it("with permessage-deflate, short append deltas after the first are compressed; a v1 connection's short deltas are not", async () => {
  ts = await startServer({ agent: streaming(WORDS.slice(0, 5)), deltaIntervalMs: 0 });
  const wire = (c: RawClient) => {
    const chunks: Buffer[] = [];
    (c.ws as unknown as { _socket: NodeJS.ReadableStream })._socket.prependListener("data", (b: Buffer) => {
      chunks.push(b);
    });
    return () => Buffer.concat(chunks).toString("latin1");
  };
  const plain = (await connect(ts.wsUrl)).c;
  const append = (await connect(ts.wsUrl, [FEATURE_DELTA_APPEND])).c;
  expect(append.ws.extensions).toContain("permessage-deflate");
  const [plainWire, appendWire] = [wire(plain), wire(append)];
  const runId = await send(plain, await createConversation(plain), "go");
  await plain.run(runId);
  await append.run(runId);
  expect(deltas(append, runId)).toHaveLength(5);
  // Readable on the wire = sent uncompressed: all 5 v1 deltas, only the append connection's first
  // (offset 0, kept under the usual threshold so it never waits for zlib).
  const count = (wire: string) => wire.split('"type":"message.delta"').length - 1;
  expect(count(plainWire())).toBe(5);
  expect(count(appendWire())).toBe(1);
  plain.close();
  append.close();
});

describe("Fanout: append deltas (fake peers)", () => {
  /** A Fanout whose peers record what they receive; returns what each peer received. */
  async function hubWith(n: number, appendDeltas: boolean) {
    const fanout = new Fanout();
    const conns = Array.from({ length: n }, () => new FakePeer(appendDeltas ? [FEATURE_DELTA_APPEND] : []));
    for (const conn of conns) fanout.add(conn);
    const hub = {
      broadcastDelta: (msg: Delta) => fanout.publish(eventOf(msg)),
      broadcast: (msg: Parameters<typeof eventOf>[0]) => fanout.publish(eventOf(msg)),
      add: (peer: FakePeer) => fanout.add(peer),
      remove: (peer: FakePeer) => fanout.remove(peer),
    };
    const received = conns.map((c) => c.received as unknown as Delta[]);
    // Peers receive synchronously: nothing to wait for.
    const settle = async (_count: number) => {};
    const close = async () => {};
    return { hub, conns, received, settle, close };
  }

  const delta = (text: string, id = "draft-1"): Delta => ({
    type: "message.delta",
    conversation_id: "c",
    message_id: id,
    text,
    ts: "2026-09-02T18:00:00.000Z",
  });

  it("a draft that is rewritten (not append-only) is sent from the common prefix, 0 for a full replace", async () => {
    const { hub, conns, received, settle, close } = await hubWith(1, true);
    const drafts = ["Hello wor", "Hello world", "Hello there", "Bye", "Bye 😀", "Bye 😁"];
    for (const text of drafts) hub.broadcastDelta(delta(text));
    await settle(drafts.length);
    expect(received[0]!.map((d) => [d.offset, d.text])).toEqual([
      [0, "Hello wor"],
      [9, "ld"],
      [6, "there"],
      [0, "Bye"],
      [3, " 😀"],
      [4, "😁"],
    ]);
    expect(stitch(received[0]!)).toEqual(drafts);
    for (const c of conns) c.close(1000);
    await close();
  });

  it("forgets a draft at message.complete and a connection when it leaves: offset 0 again", async () => {
    const { hub, conns, received, settle, close } = await hubWith(2, true);
    hub.broadcastDelta(delta("a"));
    hub.broadcastDelta(delta("ab"));
    await settle(2);
    hub.broadcast({
      type: "message.complete",
      conversation_id: "c",
      message_id: "draft-1",
      text: "ab",
      ts: "2026-09-02T18:00:00.000Z",
    });
    hub.broadcastDelta(delta("abc"));
    await settle(4);
    expect(received[0]![3]).toMatchObject({ offset: 0, text: "abc" });
    hub.remove(conns[1]!);
    hub.add(conns[1]!);
    hub.broadcastDelta(delta("abcd"));
    await settle(5);
    expect(received[0]![4]).toMatchObject({ offset: 3, text: "d" });
    expect(received[1]![4]).toMatchObject({ offset: 0, text: "abcd" });
    for (const c of conns) c.close(1000);
    await close();
  });
});
