import { FEATURE_QUEUE, FEATURE_RESUME, LIMITS, type ServerMessage } from "@pheby/protocol";
import { describe, expect, it } from "vitest";
import type { AgentBackend, TurnResult } from "../src/index.js";
import {
  createConversation,
  RawClient,
  SECRET,
  scriptedBackend,
  send,
  startServer,
  useTempDirs,
} from "./helpers.js";

const dir = useTempDirs();
const QUEUE = [FEATURE_QUEUE];

/**
 * A backend whose turns answer their prompt, each waiting until the test lets it finish
 * (`finish()` ends the oldest waiting turn), so runs stay active for as long as a test needs.
 */
function heldBackend() {
  const waiting: (() => void)[] = [];
  const prompts: string[] = [];
  const backend: AgentBackend = scriptedBackend("held", async (input, sink, signal): Promise<TurnResult> => {
    prompts.push(input.text);
    sink.text(`answer to ${input.text}`);
    await new Promise<void>((resolve) => {
      waiting.push(resolve);
      signal.addEventListener("abort", () => {
        waiting.splice(waiting.indexOf(resolve), 1);
        resolve();
      });
    });
    return { status: signal.aborted ? "cancelled" : "completed" };
  });
  return {
    backend,
    prompts,
    /** End the oldest turn still waiting (once one is). */
    async finish() {
      while (waiting.length === 0) await new Promise((r) => setTimeout(r, 5));
      waiting.shift()!();
    },
  };
}

function queueSend(
  client: RawClient,
  conversationId: string,
  text: string,
  extra: Record<string, unknown> = {},
) {
  return client.request(
    { type: "chat.send", conversation_id: conversationId, text, queue: true, ...extra },
    "run.queued",
  );
}

async function queued(
  client: RawClient,
  conversationId: string,
  text: string,
  extra: Record<string, unknown> = {},
) {
  const reply = await queueSend(client, conversationId, text, extra);
  if (reply.type !== "run.queued") throw new Error(`not queued: ${JSON.stringify(reply)}`);
  return reply;
}

/** The `queued` lists of the queue.changed events a connection received, texts only. */
function changes(client: RawClient): string[][] {
  return client.frames.flatMap((f) => (f.type === "queue.changed" ? [f.queued.map((q) => q.text)] : []));
}

describe("queue", () => {
  it("queues follow-ups behind the active run and starts them in order, as ordinary runs for everybody", async () => {
    const agent = heldBackend();
    const ts = await startServer({ dataDir: dir(), agent: agent.backend });
    const phone = await RawClient.connect(ts.wsUrl, { features: QUEUE });
    const v1 = await RawClient.connect(ts.wsUrl);
    const id = await createConversation(phone);
    const active = await send(phone, id, "first");
    const q1 = await queued(phone, id, "second");
    const q2 = await queued(phone, id, "third");
    expect([q1.position, q2.position]).toEqual([1, 2]);
    await phone.next("queue.changed", (f) => f.queued.length === 2);
    expect(changes(phone)).toEqual([["second"], ["second", "third"]]);
    // The reply comes first, then the broadcast, as for every request.
    const order = phone.frames.filter((f) => f.type === "run.queued" || f.type === "queue.changed");
    expect(order.map((f) => f.type)).toEqual(["run.queued", "queue.changed", "run.queued", "queue.changed"]);
    // Queued messages are not history yet.
    const history = await phone.ok(
      { type: "conversation.open", conversation_id: id },
      "conversation.history",
    );
    expect(history.messages.map((m) => m.text)).toEqual(["first"]);
    expect(history.queue).toEqual([
      { run_id: q1.run_id, text: "second", position: 1 },
      { run_id: q2.run_id, text: "third", position: 2 },
    ]);

    await agent.finish();
    const started = await v1.next("run.accepted", (f) => f.run_id === q1.run_id);
    expect(started).not.toHaveProperty("request_id");
    await agent.finish();
    await v1.next("run.accepted", (f) => f.run_id === q2.run_id);
    await agent.finish();
    await phone.run(q2.run_id);
    await v1.next("run.finished", (f) => f.run_id === q2.run_id);
    expect(agent.prompts).toEqual(["first", "second", "third"]);
    // Every run, queued or not, had exactly the v1 sequence, in order, for the v1 connection.
    const runOrder = v1.frames.filter((f) => f.type === "run.accepted" || f.type === "run.finished");
    expect(runOrder.map((f) => [f.type, (f as { run_id: string }).run_id])).toEqual([
      ["run.accepted", active],
      ["run.finished", active],
      ["run.accepted", q1.run_id],
      ["run.finished", q1.run_id],
      ["run.accepted", q2.run_id],
      ["run.finished", q2.run_id],
    ]);
    expect(changes(phone).slice(2)).toEqual([["third"], []]);
    expect(v1.frames.some((f) => f.type === "queue.changed" || f.type === "run.queued")).toBe(false);
    const after = await v1.ok({ type: "conversation.open", conversation_id: id }, "conversation.history");
    expect(after.messages.map((m) => m.text)).toEqual([
      "first",
      "answer to first",
      "second",
      "answer to second",
      "third",
      "answer to third",
    ]);
    expect(after).not.toHaveProperty("queue");
    phone.close();
    v1.close();
    await ts.close();
  });

  it("the next one starts whatever the status of the active run (here: cancelled)", async () => {
    const agent = heldBackend();
    const ts = await startServer({ dataDir: dir(), agent: agent.backend });
    const c = await RawClient.connect(ts.wsUrl, { features: QUEUE });
    const id = await createConversation(c);
    const active = await send(c, id, "first");
    const next = await queued(c, id, "second");
    await c.ok({ type: "run.cancel", conversation_id: id, run_id: active }, "run.finished");
    await c.next("run.accepted", (f) => f.run_id === next.run_id);
    await agent.finish();
    await c.run(next.run_id);
    c.close();
    await ts.close();
  });

  it("queue: true with no active run just starts; without queue: true, or without the feature, run_active", async () => {
    const agent = heldBackend();
    const ts = await startServer({ dataDir: dir(), agent: agent.backend });
    const c = await RawClient.connect(ts.wsUrl, { features: QUEUE });
    const v1 = await RawClient.connect(ts.wsUrl);
    const id = await createConversation(c);
    const started = await c.request(
      { type: "chat.send", conversation_id: id, text: "go", queue: true },
      "run.accepted",
    );
    expect(started.type).toBe("run.accepted");
    expect(
      await c.request({ type: "chat.send", conversation_id: id, text: "x" }, "run.queued"),
    ).toMatchObject({
      error: { code: "run_active" },
    });
    expect(await queueSend(v1, id, "x")).toMatchObject({ error: { code: "run_active" } });
    await agent.finish();
    c.close();
    v1.close();
    await ts.close();
  });

  it("run.cancel of a queued run removes it: the canceller's reply, queue.changed, nothing for others", async () => {
    const agent = heldBackend();
    const ts = await startServer({ dataDir: dir(), agent: agent.backend });
    const phone = await RawClient.connect(ts.wsUrl, { features: QUEUE });
    const tablet = await RawClient.connect(ts.wsUrl, { features: QUEUE });
    const v1 = await RawClient.connect(ts.wsUrl);
    const id = await createConversation(phone);
    const active = await send(phone, id, "first");
    const drop = await queued(phone, id, "never mind");
    const keep = await queued(phone, id, "keep me");
    const cancelled = await phone.ok(
      { type: "run.cancel", conversation_id: id, run_id: drop.run_id },
      "run.finished",
    );
    expect(cancelled).toMatchObject({ conversation_id: id, run_id: drop.run_id, status: "cancelled" });
    await tablet.nextAny((f) => f.type === "queue.changed" && f.queued[0]?.text === "keep me");
    expect(changes(tablet).at(-1)).toEqual(["keep me"]);
    expect(tablet.frames.some((f) => f.type === "run.finished" && f.run_id === drop.run_id)).toBe(false);
    // A second cancel of it, or a cancel from a connection that cannot know it, is not_found.
    for (const who of [phone, v1]) {
      expect(
        await who.request({ type: "run.cancel", conversation_id: id, run_id: drop.run_id }, "run.finished"),
      ).toMatchObject({
        error: { code: "not_found" },
      });
    }
    const v1Cancel = await v1.request(
      { type: "run.cancel", conversation_id: id, run_id: keep.run_id },
      "run.finished",
    );
    expect(v1Cancel).toMatchObject({ error: { code: "not_found" } });
    await agent.finish();
    await v1.next("run.accepted", (f) => f.run_id === keep.run_id);
    await agent.finish();
    await phone.run(keep.run_id);
    expect(agent.prompts).toEqual(["first", "keep me"]);
    expect(v1.frames.some((f) => "run_id" in f && f.run_id === drop.run_id)).toBe(false);
    expect(active).not.toBe(keep.run_id);
    phone.close();
    tablet.close();
    v1.close();
    await ts.close();
  });

  it(`accepts ${LIMITS.queuedRunsPerConversation} queued runs and refuses one more with bad_request`, async () => {
    const agent = heldBackend();
    const ts = await startServer({ dataDir: dir(), agent: agent.backend });
    const c = await RawClient.connect(ts.wsUrl, { features: QUEUE });
    const id = await createConversation(c);
    await send(c, id, "first");
    for (let i = 1; i <= LIMITS.queuedRunsPerConversation; i++) {
      expect((await queued(c, id, `follow-up ${i}`)).position).toBe(i);
    }
    expect(await queueSend(c, id, "one too many")).toMatchObject({ error: { code: "bad_request" } });
    const history = await c.ok({ type: "conversation.open", conversation_id: id }, "conversation.history");
    expect(history.queue).toHaveLength(LIMITS.queuedRunsPerConversation);
    c.close();
    await ts.close();
  });

  it("queued uploads are claimed when queued, announced when the run starts, released when it is cancelled", async () => {
    const agent = heldBackend();
    const ts = await startServer({ dataDir: dir(), agent: agent.backend });
    const c = await RawClient.connect(ts.wsUrl, { features: QUEUE });
    const id = await createConversation(c);
    const upload = async (name: string) => {
      const res = await fetch(`${ts.url}/attachments?conversation_id=${id}&filename=${name}`, {
        method: "POST",
        headers: { authorization: `Bearer ${SECRET}`, "content-type": "text/plain" },
        body: name,
      });
      return ((await res.json()) as { attachment: { attachment_id: string } }).attachment.attachment_id;
    };
    const [a, b] = [await upload("a.txt"), await upload("b.txt")];
    await send(c, id, "first");
    const withA = await queued(c, id, "with a", { attachment_ids: [a] });
    // Claimed now: another send of it is refused; not part of the history while queued.
    expect(await queueSend(c, id, "again", { attachment_ids: [a] })).toMatchObject({
      error: { code: "bad_request" },
    });
    const before = await c.ok({ type: "conversation.open", conversation_id: id }, "conversation.history");
    expect(before.attachments).toEqual([]);
    // A cancelled queued send gives its uploads back.
    const withB = await queued(c, id, "with b", { attachment_ids: [b] });
    await c.ok({ type: "run.cancel", conversation_id: id, run_id: withB.run_id }, "run.finished");
    const bAgain = await queued(c, id, "b again", { attachment_ids: [b] });

    await agent.finish(); // "first" ends, "with a" starts
    const addedA = await c.next("attachment.added", (f) => f.attachment.attachment_id === a);
    expect(addedA.attachment.message_id).toMatch(/^m\d+$/);
    const startA = c.frames.findIndex((f) => f.type === "run.accepted" && f.run_id === withA.run_id);
    expect(startA).toBeGreaterThanOrEqual(0);
    expect(c.frames.indexOf(addedA)).toBeGreaterThan(startA);
    await agent.finish(); // "with a" ends, "b again" starts
    await c.next("attachment.added", (f) => f.attachment.attachment_id === b);
    await agent.finish();
    await c.run(bAgain.run_id);
    expect(agent.prompts).toEqual(["first", "with a", "b again"]);
    c.close();
    await ts.close();
  });

  it("survives a restart: the queue is kept and its runs start in order when the server is back", async () => {
    const dataDir = dir();
    const first = heldBackend();
    let ts = await startServer({ dataDir, agent: first.backend });
    const c = await RawClient.connect(ts.wsUrl, { features: QUEUE });
    const id = await createConversation(c);
    const active = await send(c, id, "first");
    const q1 = await queued(c, id, "second");
    const q2 = await queued(c, id, "third");
    c.close();
    await ts.close();

    const second = heldBackend();
    ts = await startServer({ dataDir, agent: second.backend });
    const v1 = await RawClient.connect(ts.wsUrl);
    const open = await v1.ok({ type: "conversation.open", conversation_id: id }, "conversation.history");
    // The interrupted run failed; the first queued one is running (it started at the restart).
    expect(open.run?.run_id).toBe(q1.run_id);
    await second.finish();
    await v1.next("run.accepted", (f) => f.run_id === q2.run_id);
    await second.finish();
    await v1.next("run.finished", (f) => f.run_id === q2.run_id);
    expect(second.prompts).toEqual(["second", "third"]);
    expect(active).not.toBe(q1.run_id);
    v1.close();
    await ts.close();
  });

  it("deleting the conversation drops its queue: no queued run starts or finishes", async () => {
    const agent = heldBackend();
    const ts = await startServer({ dataDir: dir(), agent: agent.backend });
    const c = await RawClient.connect(ts.wsUrl, { features: QUEUE });
    const id = await createConversation(c);
    const active = await send(c, id, "first");
    const q = await queued(c, id, "second");
    await c.ok({ type: "conversation.delete", conversation_id: id }, "conversation.deleted");
    await c.ok({ type: "ping" }, "pong");
    const about = c.frames
      .filter((f) => f.type !== "run.queued" && "run_id" in f)
      .map((f) => (f as { run_id: string }).run_id);
    expect(about).toContain(active);
    expect(about).not.toContain(q.run_id);
    expect(agent.prompts).toEqual(["first"]);
    c.close();
    await ts.close();
  });

  it("with resume as well, queued runs show their client_message_id (only there)", async () => {
    const agent = heldBackend();
    const ts = await startServer({ dataDir: dir(), agent: agent.backend });
    const both = await RawClient.connect(ts.wsUrl, { features: [FEATURE_QUEUE, FEATURE_RESUME] });
    const queueOnly = await RawClient.connect(ts.wsUrl, { features: QUEUE });
    const id = await createConversation(both);
    await send(both, id, "first");
    const reply = await queueSend(both, id, "tagged", { client_message_id: "cm-7" });
    expect(reply).toMatchObject({ type: "run.queued", position: 1 });
    expect((reply as ServerMessage & { seq?: number }).seq).toBeTypeOf("number");
    // A retry gets the same queued run.
    expect(await queueSend(both, id, "tagged", { client_message_id: "cm-7" })).toMatchObject({
      run_id: (reply as { run_id: string }).run_id,
    });
    const withId = await both.next("queue.changed");
    const withoutId = await queueOnly.next("queue.changed");
    expect(withId.queued).toEqual([expect.objectContaining({ text: "tagged", client_message_id: "cm-7" })]);
    expect(withoutId.queued).toEqual([{ run_id: withId.queued[0]!.run_id, text: "tagged", position: 1 }]);
    const history = await both.ok({ type: "conversation.open", conversation_id: id }, "conversation.history");
    expect(history.queue).toEqual(withId.queued);
    await agent.finish();
    await agent.finish();
    await both.run(withId.queued[0]!.run_id);
    const after = await both.ok({ type: "conversation.open", conversation_id: id }, "conversation.history");
    expect(after.messages.find((m) => m.text === "tagged")).toMatchObject({ client_message_id: "cm-7" });
    both.close();
    queueOnly.close();
    await ts.close();
  });
});
