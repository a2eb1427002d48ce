import {
  applyDelta,
  FEATURE_DELTA_APPEND,
  FEATURE_RESUME,
  type ServerMessage,
  stripDisabledFields,
} from "@pheby/protocol";
import { describe, expect, it } from "vitest";
import { DELTAS_PER_FSYNC } from "../src/store/resume-log.js";
import {
  createConversation,
  RawClient,
  SECRET,
  send,
  spawnServerProcess,
  startServer,
  streamingBackend,
  type TestServer,
  useTempDirs,
} from "./helpers.js";

const dir = useTempDirs();
const RESUME = [FEATURE_RESUME];

/** A frame as a connection without `resume` gets it: no `seq`, no `conversation_id` on `*.resolved`. */
function withoutResume(frame: ServerMessage): ServerMessage {
  const v1 = structuredClone(frame) as ServerMessage & Record<string, unknown>;
  stripDisabledFields(v1, frame.type, new Set());
  return v1;
}

/** Without the requester's own `request_id` (what another client's copy looks like). */
function shared(frame: ServerMessage): ServerMessage {
  const { request_id: _r, ...rest } = frame as ServerMessage & { request_id?: string };
  return rest as ServerMessage;
}

/** The events a resuming client may be sent for `frames`: consecutive deltas of one message, and consecutive events of one tool call, collapsed to the last. */
function collapsed(frames: readonly ServerMessage[]): ServerMessage[] {
  const out: ServerMessage[] = [];
  for (const f of frames) {
    const last = out.at(-1);
    const sameDraft =
      f.type === "message.delta" && last?.type === "message.delta" && last.message_id === f.message_id;
    const sameCall =
      f.type === "tool.event" && last?.type === "tool.event" && last.tool_call_id === f.tool_call_id;
    if (sameDraft || sameCall) out[out.length - 1] = f;
    else out.push(f);
  }
  return out;
}

function seqOf(frame: ServerMessage): number {
  return (frame as { seq?: number }).seq ?? Number.NaN;
}

/** Every frame a connection received for a conversation after `seq`, events only (replies to it excluded). */
function eventsAfter(client: RawClient, conversationId: string, seq: number): ServerMessage[] {
  return client.frames.filter(
    (f) =>
      (f as { conversation_id?: string }).conversation_id === conversationId &&
      seqOf(f) > seq &&
      f.type !== "conversation.history",
  );
}

/** `conversation.open`, with `since_seq` when given: its reply, `conversation.resumed` or `conversation.history`. */
async function open(client: RawClient, conversationId: string, sinceSeq?: number) {
  const request_id = `open-${Math.random().toString(36).slice(2)}`;
  client.send({
    type: "conversation.open",
    conversation_id: conversationId,
    request_id,
    ...(sinceSeq === undefined ? {} : { since_seq: sinceSeq }),
  });
  const reply = await client.nextAny((f) => (f as { request_id?: string }).request_id === request_id);
  if (reply.type !== "conversation.resumed" && reply.type !== "conversation.history") {
    throw new Error(`unexpected reply ${JSON.stringify(reply)}`);
  }
  return reply;
}

/** A resume connection's baseline for a conversation: `conversation.history.seq`. */
async function baseline(client: RawClient, conversationId: string): Promise<number> {
  const history = await client.ok(
    { type: "conversation.open", conversation_id: conversationId },
    "conversation.history",
  );
  expect(history.seq).toBeTypeOf("number");
  return history.seq!;
}

/** Resume from `since`, and wait until the replay (ending at `to_seq`) has arrived. */
async function resume(client: RawClient, conversationId: string, since: number) {
  const reply = await open(client, conversationId, since);
  if (reply.type !== "conversation.resumed") throw new Error(`not resumed: ${JSON.stringify(reply)}`);
  if (reply.to_seq > since) await client.nextAny((f) => seqOf(f) === reply.to_seq);
  return { reply, replayed: eventsAfter(client, conversationId, since) };
}

describe("resume: seq", () => {
  it("stamps every conversation frame of a resume connection; a v1 connection gets the same frames without it, byte for byte", async () => {
    const ts = await startServer({ dataDir: dir() });
    const phone = await RawClient.connect(ts.wsUrl, { features: RESUME });
    const v1 = await RawClient.connect(ts.wsUrl);
    const id = await createConversation(phone);
    const runId = await send(phone, id, "/sim approval");
    const ask = await phone.next("approval.request");
    await phone.ok(
      { type: "approval.respond", approval_id: ask.approval_id, choice: "once" },
      "approval.resolved",
    );
    await phone.run(runId);
    await v1.nextAny((f) => f.type === "run.finished");

    const events = phone.frames.filter((f) => "conversation_id" in f || f.type === "approval.resolved");
    // Each has seq, increasing; the resolved approval names its conversation.
    const seqs = events.map(seqOf);
    expect(seqs.every(Number.isInteger)).toBe(true);
    for (let i = 1; i < seqs.length; i++) expect(seqs[i]).toBeGreaterThanOrEqual(seqs[i - 1]!);
    expect(phone.frames.find((f) => f.type === "approval.resolved")).toMatchObject({ conversation_id: id });

    // The v1 connection's bytes are the resume connection's events without resume's fields
    // (and without the request_id of the phone's own copy of run.accepted).
    const phoneEvents = phone.raw
      .map((r) => JSON.parse(r) as ServerMessage)
      .filter((f) => f.type !== "ready" && f.type !== "conversation.created")
      .map((f) => withoutResume(f))
      .map((f) => JSON.stringify(f.type === "run.accepted" ? shared(f) : f));
    expect(phoneEvents).toEqual(v1.raw.slice(1));
    expect(phoneEvents.length).toBeGreaterThan(8);
    phone.close();
    v1.close();
    await ts.close();
  });

  it("a snapshot carries the conversation's seq, and later events carry greater ones", async () => {
    const ts = await startServer({ dataDir: dir() });
    const c = await RawClient.connect(ts.wsUrl, { features: RESUME });
    const id = await createConversation(c);
    const before = await baseline(c, id);
    const runId = await send(c, id, "hello");
    await c.run(runId);
    const after = await baseline(c, id);
    const run = c.frames.filter((f) => seqOf(f) > before && seqOf(f) <= after);
    expect(run.map((f) => f.type)).toContain("run.finished");
    expect(Math.max(...run.map(seqOf))).toBe(after);
    c.close();
    await ts.close();
  });
});

describe("resume: conversation.open { since_seq }", () => {
  /** A phone that drops after its baseline while an observer stays; `act` happens during the drop. */
  async function dropAndResume(
    ts: TestServer,
    act: (observer: RawClient, id: string) => Promise<void>,
    features = RESUME,
  ) {
    const observer = await RawClient.connect(ts.wsUrl, { features: RESUME });
    const id = await createConversation(observer);
    const phone = await RawClient.connect(ts.wsUrl, { features });
    const since = await baseline(phone, id);
    phone.close();
    await phone.closed;
    await act(observer, id);
    const back = await RawClient.connect(ts.wsUrl, { features });
    const resumed = await resume(back, id, since);
    return { observer, back, id, since, ...resumed };
  }

  it("sends exactly what a connected observer saw, in order, without its request_ids, then live events", async () => {
    const ts = await startServer({ dataDir: dir() });
    const { observer, back, id, since, reply, replayed } = await dropAndResume(ts, async (o, id) => {
      await o.run(await send(o, id, "/sim tools"));
      await o.ok(
        { type: "conversation.rename", conversation_id: id, name: "Renamed" },
        "conversation.renamed",
      );
      await o.ok({ type: "yolo.set", conversation_id: id, enabled: true }, "yolo.changed");
    });
    const seen = eventsAfter(observer, id, since)
      .filter((f) => !("request_id" in f) || f.type === "run.accepted")
      .map(shared);
    expect(replayed).toEqual(collapsed(seen));
    expect(replayed.some((f) => "request_id" in f)).toBe(false);
    expect(reply).toMatchObject({ conversation_id: id, from_seq: since, to_seq: seqOf(seen.at(-1)!) });
    expect(replayed.map((f) => f.type)).toEqual(
      expect.arrayContaining([
        "run.accepted",
        "tool.event",
        "run.finished",
        "conversation.renamed",
        "yolo.changed",
      ]),
    );

    // Live events continue after the replay.
    const live = await send(observer, id, "and now?");
    const accepted = await back.next("run.accepted", (f) => f.run_id === live);
    expect(seqOf(accepted)).toBeGreaterThan(reply.to_seq);
    await back.run(live);
    observer.close();
    back.close();
    await ts.close();
  });

  it("nothing missed: resumed with from_seq = to_seq and no frame", async () => {
    const ts = await startServer({ dataDir: dir() });
    const c = await RawClient.connect(ts.wsUrl, { features: RESUME });
    const id = await createConversation(c);
    await c.run(await send(c, id, "hi"));
    const since = await baseline(c, id);
    const count = c.frames.length;
    const reply = await open(c, id, since);
    expect(reply).toMatchObject({ type: "conversation.resumed", from_seq: since, to_seq: since });
    await c.ok({ type: "ping" }, "pong");
    expect(c.frames.slice(count).map((f) => f.type)).toEqual(["conversation.resumed", "pong"]);
    c.close();
    await ts.close();
  });

  it("falls back to the snapshot with resumed: false when the log no longer reaches back, or for a seq never issued", async () => {
    const ts = await startServer({ dataDir: dir(), replayLog: { maxEvents: 3 } });
    const c = await RawClient.connect(ts.wsUrl, { features: RESUME });
    const id = await createConversation(c);
    const since = await baseline(c, id);
    await c.run(await send(c, id, "a few words of answer"));
    const now = await baseline(c, id);
    for (const sinceSeq of [since, now + 1]) {
      const fallback = await open(c, id, sinceSeq);
      expect(fallback).toMatchObject({ type: "conversation.history", resumed: false, seq: now });
      expect(fallback.type === "conversation.history" && fallback.messages.map((m) => m.role)).toEqual([
        "user",
        "assistant",
      ]);
    }
    // The log still holds the last 3 events: resuming from within them works.
    expect((await open(c, id, now - 1)).type).toBe("conversation.resumed");
    c.close();
    await ts.close();
  });

  it("a delta.append connection gets a message's missed deltas as one from offset 0, then appends", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const chunks = ["One ", "two ", "three ", "four ", "five ", "six"];
    const ts = await startServer({
      dataDir: dir(),
      agent: streamingBackend(chunks, { pauseMs: 5, gate: { after: 4, open: gate } }),
      deltaIntervalMs: 0,
    });
    const features = [FEATURE_RESUME, FEATURE_DELTA_APPEND];
    const observer = await RawClient.connect(ts.wsUrl, { features });
    const id = await createConversation(observer);
    const phone = await RawClient.connect(ts.wsUrl, { features });
    const since = await baseline(phone, id);
    const runId = await send(observer, id, "count");
    // The phone saw the first delta, then dropped.
    const first = await phone.next("message.delta");
    phone.close();
    await phone.closed;
    await observer.nextAny((f) => f.type === "message.delta" && f.text.endsWith("four "));

    const back = await RawClient.connect(ts.wsUrl, { features });
    const { replayed } = await resume(back, id, seqOf(first));
    const deltas = replayed.filter((f) => f.type === "message.delta");
    expect(deltas).toEqual([expect.objectContaining({ offset: 0, text: "One two three four " })]);
    release();
    const complete = await back.next("message.complete");
    let draft = "One two three four ";
    for (const f of back.frames.filter((f) => f.type === "message.delta").slice(1))
      draft = applyDelta(draft, f);
    expect(draft).toBe(complete.text);
    expect(complete.text).toBe(chunks.join(""));
    await back.run(runId);
    expect(since).toBeLessThan(seqOf(first));
    observer.close();
    back.close();
    await ts.close();
  });

  it("a connection without resume gets the plain snapshot: since_seq is ignored, no seq", async () => {
    const ts = await startServer({ dataDir: dir() });
    const c = await RawClient.connect(ts.wsUrl);
    const id = await createConversation(c);
    const history = await c.ok(
      { type: "conversation.open", conversation_id: id, since_seq: 0 },
      "conversation.history",
    );
    expect(history).not.toHaveProperty("seq");
    expect(history).not.toHaveProperty("resumed");
    c.close();
    await ts.close();
  });
});

describe("resume: false (the operator turned it off)", () => {
  it("is not offered: no seq, no replay, no idempotency; queue still is", async () => {
    const ts = await startServer({ dataDir: dir(), resume: false });
    const c = await RawClient.connect(ts.wsUrl, { features: [FEATURE_RESUME, "queue"] });
    expect(c.features).toEqual(["queue"]);
    const id = await createConversation(c);
    const history = await open(c, id, 0);
    expect(history.type).toBe("conversation.history");
    expect(history).not.toHaveProperty("seq");
    const frame = { type: "chat.send", conversation_id: id, text: "x", client_message_id: "same" };
    const a = await c.ok(frame, "run.accepted");
    await c.run(a.run_id);
    expect((await c.ok(frame, "run.accepted")).run_id).not.toBe(a.run_id);
    c.close();
    await ts.close();
  });
});

describe("resume across a restart", () => {
  it("a drop, a restart, then the resume: the phone gets what happened before the restart", async () => {
    const dataDir = dir();
    let ts = await startServer({ dataDir });
    const observer = await RawClient.connect(ts.wsUrl, { features: RESUME });
    const id = await createConversation(observer);
    const phone = await RawClient.connect(ts.wsUrl, { features: RESUME });
    const since = await baseline(phone, id);
    phone.close();
    await observer.run(await send(observer, id, "before the restart"));
    const seen = eventsAfter(observer, id, since).map(shared);
    observer.close();
    await ts.close();

    ts = await startServer({ dataDir });
    const back = await RawClient.connect(ts.wsUrl, { features: RESUME });
    const { replayed } = await resume(back, id, since);
    expect(replayed).toEqual(collapsed(seen));
    // The seq keeps growing after the restart.
    const next = await send(back, id, "after the restart");
    expect(seqOf(await back.next("run.accepted", (f) => f.run_id === next))).toBeGreaterThan(
      seqOf(seen.at(-1)!),
    );
    await back.run(next);
    back.close();
    await ts.close();
  });

  it("what a stop did to a run in flight is replayed too: its question withdrawn, the run failed", async () => {
    const dataDir = dir();
    let ts = await startServer({ dataDir });
    const phone = await RawClient.connect(ts.wsUrl, { features: RESUME });
    const id = await createConversation(phone);
    const runId = await send(phone, id, "/sim approval");
    const ask = await phone.next("approval.request");
    const since = seqOf(ask);
    phone.close();
    await ts.close();

    ts = await startServer({ dataDir });
    const back = await RawClient.connect(ts.wsUrl, { features: RESUME });
    const { replayed } = await resume(back, id, since);
    expect(replayed.map(withoutResume).map(shared)).toEqual([
      { type: "approval.resolved", approval_id: ask.approval_id, choice: "deny", accepted: false },
      expect.objectContaining({ type: "tool.event", status: "cancelled" }),
      expect.objectContaining({ type: "message.complete", message_id: `draft-${runId}` }),
      {
        type: "run.finished",
        conversation_id: id,
        run_id: runId,
        status: "failed",
        error: "Server shutting down",
      },
    ]);
    back.close();
    await ts.close();
  });
});

describe("resume after a crash", () => {
  it("after a kill -9, the restart closes the interrupted run in the log: question withdrawn, tool cancelled, run failed", async () => {
    const dataDir = dir();
    const { child, port } = await spawnServerProcess(dataDir);
    const phone = await RawClient.connect(`ws://127.0.0.1:${port}/ws`, { features: RESUME });
    const id = await createConversation(phone);
    const runId = await send(phone, id, "/sim approval");
    const ask = await phone.next("approval.request");
    child.kill("SIGKILL");
    await phone.closed;

    const ts = await startServer({ dataDir });
    const back = await RawClient.connect(ts.wsUrl, { features: RESUME });
    const { replayed } = await resume(back, id, seqOf(ask));
    const error = "The server stopped during this run";
    expect(replayed.map(withoutResume)).toEqual([
      { type: "approval.resolved", approval_id: ask.approval_id, choice: "deny", accepted: false },
      expect.objectContaining({ type: "tool.event", status: "cancelled", tool_call_id: "sim-tool-1" }),
      expect.objectContaining({ type: "message.complete", message_id: `draft-${runId}`, text: "" }),
      { type: "run.finished", conversation_id: id, run_id: runId, status: "failed", error },
    ]);
    // The seqs the dead process might have issued without a sync are skipped.
    expect(seqOf(replayed[0]!)).toBeGreaterThan(seqOf(ask) + DELTAS_PER_FSYNC);
    // The withdrawn approval is gone for good.
    expect(
      await back.request(
        { type: "approval.respond", approval_id: ask.approval_id, choice: "once" },
        "approval.resolved",
      ),
    ).toMatchObject({ error: { code: "approval_not_found" } });
    back.close();
    await ts.close();
  });
});

describe("resume: retry-safe sends", () => {
  it("a repeated chat.send gets the first run.accepted, to the retrying connection only", async () => {
    const ts = await startServer({ dataDir: dir() });
    const phone = await RawClient.connect(ts.wsUrl, { features: RESUME });
    const other = await RawClient.connect(ts.wsUrl, { features: RESUME });
    const id = await createConversation(phone);
    const sendOnce = () =>
      phone.ok(
        { type: "chat.send", conversation_id: id, text: "once", client_message_id: "cm-1" },
        "run.accepted",
      );
    const first = await sendOnce();
    const again = await sendOnce();
    expect(again.run_id).toBe(first.run_id);
    await phone.run(first.run_id);
    const later = await sendOnce();
    expect(later.run_id).toBe(first.run_id);
    await other.ok({ type: "ping" }, "pong");
    expect(other.frames.filter((f) => f.type === "run.accepted")).toHaveLength(1);
    // The user message carries its client_message_id for resume connections, once.
    const history = await phone.ok(
      { type: "conversation.open", conversation_id: id },
      "conversation.history",
    );
    expect(history.messages.map((m) => [m.role, m.client_message_id])).toEqual([
      ["user", "cm-1"],
      ["assistant", undefined],
    ]);
    // The same ID in another conversation is another send.
    const elsewhere = await createConversation(phone);
    const third = await phone.ok(
      { type: "chat.send", conversation_id: elsewhere, text: "once", client_message_id: "cm-1" },
      "run.accepted",
    );
    expect(third.run_id).not.toBe(first.run_id);
    await phone.run(third.run_id);
    phone.close();
    other.close();
    await ts.close();
  });

  it("is checked before the attachment claims, so a retry carrying the same uploads is not refused", async () => {
    const ts = await startServer({ dataDir: dir() });
    const c = await RawClient.connect(ts.wsUrl, { features: RESUME });
    const id = await createConversation(c);
    const upload = await fetch(`${ts.url}/attachments?conversation_id=${id}&filename=a.txt`, {
      method: "POST",
      headers: { authorization: `Bearer ${SECRET}`, "content-type": "text/plain" },
      body: "hello",
    });
    const { attachment } = (await upload.json()) as { attachment: { attachment_id: string } };
    const frame = {
      type: "chat.send",
      conversation_id: id,
      text: "see file",
      attachment_ids: [attachment.attachment_id],
      client_message_id: "with-file",
    };
    const first = await c.ok(frame, "run.accepted");
    expect((await c.ok(frame, "run.accepted")).run_id).toBe(first.run_id);
    await c.run(first.run_id);
    // A v1-style retry without the ID would be refused for the claim.
    const { client_message_id: _id, ...plain } = frame;
    expect(await c.request(plain, "run.accepted")).toMatchObject({ error: { code: "bad_request" } });
    c.close();
    await ts.close();
  });

  it("remembers a permanent refusal, not a transient one", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const ts = await startServer({
      dataDir: dir(),
      agent: streamingBackend(["a", "b"], { gate: { after: 1, open: gate } }),
    });
    const c = await RawClient.connect(ts.wsUrl, { features: RESUME });
    const id = await createConversation(c);
    const busy = await send(c, id, "first");
    const retry = { type: "chat.send", conversation_id: id, text: "second", client_message_id: "later" };
    expect(await c.request(retry, "run.accepted")).toMatchObject({ error: { code: "run_active" } });
    release();
    await c.run(busy);
    const accepted = await c.ok(retry, "run.accepted");
    await c.run(accepted.run_id);

    const bad = {
      type: "chat.send",
      conversation_id: id,
      text: "x",
      attachment_ids: ["f".repeat(32)],
      client_message_id: "bad",
    };
    const refused = await c.request(bad, "run.accepted");
    expect(refused).toMatchObject({ type: "error", error: { code: "bad_request" } });
    const again = await c.request(bad, "run.accepted");
    expect(again.type === "error" && again.error).toEqual(refused.type === "error" && refused.error);
    c.close();
    await ts.close();
  });

  it("a repeated conversation.create gets the same conversation, once; also after a restart", async () => {
    const dataDir = dir();
    let ts = await startServer({ dataDir });
    let c = await RawClient.connect(ts.wsUrl, { features: RESUME });
    const frame = { type: "conversation.create", name: "Trip", client_message_id: "new-trip" };
    const first = await c.ok(frame, "conversation.created");
    expect(await c.ok(frame, "conversation.created")).toMatchObject({
      conversation_id: first.conversation_id,
    });
    c.close();
    await ts.close();
    ts = await startServer({ dataDir });
    c = await RawClient.connect(ts.wsUrl, { features: RESUME });
    expect(await c.ok(frame, "conversation.created")).toMatchObject({
      conversation_id: first.conversation_id,
    });
    const list = await c.ok({ type: "conversation.list" }, "conversation.snapshot");
    expect(list.conversations.map((x) => x.conversation_id)).toEqual([first.conversation_id]);
    c.close();
    await ts.close();
  });

  it("a connection without resume does not get idempotency: its client_message_id is ignored", async () => {
    const ts = await startServer({ dataDir: dir() });
    const c = await RawClient.connect(ts.wsUrl);
    const id = await createConversation(c);
    const frame = { type: "chat.send", conversation_id: id, text: "x", client_message_id: "same" };
    const a = await c.ok(frame, "run.accepted");
    await c.run(a.run_id);
    const b = await c.ok(frame, "run.accepted");
    expect(b.run_id).not.toBe(a.run_id);
    await c.run(b.run_id);
    c.close();
    await ts.close();
  });
});
