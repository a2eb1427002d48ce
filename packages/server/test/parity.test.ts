// One script over both transports: the ws transport and the in-memory one must give every peer the same
// frames, byte for byte, in the same order, so what a test proves over the in-memory transport holds over ws.
// The clock is fixed and the backend scripted, so nothing depends on timing (a delta per chunk, no tool
// durations); the server's random 32-hex IDs are renamed in order of first appearance (one renaming per run,
// shared by its peers), so frames compare byte for byte up to that consistent renaming.
import { FEATURE_DELTA_APPEND, type ServerMessageType } from "@pheby/protocol";
import { messageIdOf } from "@pheby/testkit";
import { describe, expect, it } from "vitest";
import type { TurnResult } from "../src/index.js";
import {
  RawClient,
  SECRET,
  scriptedBackend,
  startServer,
  type TestServer,
  type TestTransport,
} from "./helpers.js";

const FIXED_CLOCK = { now: () => Date.parse("2026-09-02T18:00:00.000Z") };

/** "approve" asks one approval between two chunks; "wait" streams one chunk and stops only when cancelled. */
const scripted = scriptedBackend("scripted", async (input, sink, signal): Promise<TurnResult> => {
  if (input.text === "wait") {
    sink.text("Working…");
    await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
    return { status: "cancelled" };
  }
  sink.text("Asking to clean up. ");
  const answer = await sink.askPermission({
    command: "rm -rf /tmp/build",
    description: "Destructive shell command",
    choices: ["once", "session", "always", "deny"],
  });
  sink.text(`You chose ${answer.outcome === "selected" ? answer.choice : "nothing"}; done 😀.`);
  return { status: "completed" };
});

async function hello(ts: TestServer, requestId: string, features?: string[]) {
  const c = await RawClient.open(ts.wsUrl);
  c.send({
    type: "hello",
    secret: SECRET,
    protocol_version: 1,
    request_id: requestId,
    ...(features ? { features } : {}),
  });
  await c.next("ready");
  return c;
}

/** Wait until both peers have a frame of `type` matching `pred`. */
async function both(
  a: RawClient,
  b: RawClient,
  type: ServerMessageType,
  pred: (m: Record<string, unknown>) => boolean = () => true,
) {
  const match = (m: { type: string }) => m.type === type && pred(m as unknown as Record<string, unknown>);
  await Promise.all([a.nextAny(match), b.nextAny(match)]);
}

/** hello, create, chat with an approval, cancel, rename; a v1 peer (a) beside a delta.append peer (b). */
async function script(transport: TestTransport): Promise<{ a: string[]; b: string[] }> {
  const ts = await startServer({ transport, agent: scripted, clock: FIXED_CLOCK, deltaIntervalMs: 0 });
  try {
    const a = await hello(ts, "h-a");
    const b = await hello(ts, "h-b", [FEATURE_DELTA_APPEND]);

    a.send({ type: "conversation.create", name: "Parity", request_id: "c1" });
    await both(a, b, "conversation.updated");
    const conversationId = (await a.next("conversation.created")).conversation_id;

    a.send({ type: "chat.send", conversation_id: conversationId, text: "approve", request_id: "s1" });
    const asked = await b.next("approval.request");
    b.send({ type: "approval.respond", approval_id: asked.approval_id, choice: "once", request_id: "a1" });
    await both(a, b, "run.finished");

    a.send({ type: "chat.send", conversation_id: conversationId, text: "wait", request_id: "s2" });
    const accepted = await a.next("run.accepted", (m) => m.request_id === "s2");
    await both(a, b, "message.delta", (m) => m.message_id === messageIdOf(a.frames, accepted.run_id));
    a.send({
      type: "run.cancel",
      conversation_id: conversationId,
      run_id: accepted.run_id,
      request_id: "x1",
    });
    await both(a, b, "run.finished", (m) => m.run_id === accepted.run_id);

    a.send({
      type: "conversation.rename",
      conversation_id: conversationId,
      name: "Renamed",
      request_id: "r1",
    });
    await both(a, b, "conversation.renamed", (m) => m.request_id === undefined);
    await a.next("conversation.renamed", (m) => m.request_id === "r1");
    a.close();
    b.close();
    await Promise.all([a.closed, b.closed]);
    return renameIds(a.raw, b.raw);
  } finally {
    await ts.cleanup();
  }
}

/** Replace each distinct 32-hex ID by `id-<n>`, numbered by first appearance across both peers. */
function renameIds(a: string[], b: string[]): { a: string[]; b: string[] } {
  const names = new Map<string, string>();
  const rename = (frame: string) =>
    frame.replace(/[0-9a-f]{32}/g, (id) => {
      if (!names.has(id)) names.set(id, `id-${names.size + 1}`);
      return names.get(id)!;
    });
  return { a: a.map(rename), b: b.map(rename) };
}

describe("transport parity", () => {
  it("ws and memory give each peer identical frame strings in identical order", async () => {
    const overWs = await script("ws");
    const inMemory = await script("memory");
    expect(inMemory.a).toEqual(overWs.a);
    expect(inMemory.b).toEqual(overWs.b);

    // The script covered what it claims: a v1 peer and an append peer, replies and their copies.
    const a = overWs.a.join("\n");
    const b = overWs.b.join("\n");
    expect(overWs.a.length).toBeGreaterThan(15);
    expect(a).not.toContain('"offset"');
    expect(b).toContain('"offset":20');
    expect(a).toContain('"type":"run.accepted","conversation_id"');
    expect(overWs.a.filter((f) => f.includes('"request_id":"s1"'))).toHaveLength(1);
    expect(overWs.b.filter((f) => f.includes('"request_id":"s1"'))).toHaveLength(0);
    for (const peer of [overWs.a, overWs.b]) {
      expect(peer.filter((f) => f.includes('"type":"approval.resolved","request_id":"a1"'))).toHaveLength(1);
      expect(peer.filter((f) => f.includes('"type":"run.finished","request_id":"x1"'))).toHaveLength(1);
      expect(peer.filter((f) => f.includes('"type":"conversation.renamed"'))).toHaveLength(
        peer === overWs.a ? 2 : 1,
      );
    }
  });
});
