// The Outbox seam with fake peers: the Fanout serialises once per variant, only the requester's copy
// of a reply-event carries its request_id, and extensions can add events and fields that only the
// peers which enabled them get (every other peer keeps v1, byte for byte). (A request of a feature a
// peer did not enable never reaches the dispatcher: the session's decoder answers unknown_type, which
// the push, schedules and devices server tests check end to end.)
import { type ClientMessage, FEATURE_DELTA_APPEND, FEATURE_QUEUE, type ServerMessage } from "@pheby/protocol";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ServerContext } from "../src/handlers/context.js";
import { Dispatcher } from "../src/handlers/index.js";
import { Fanout } from "../src/outbox/fanout.js";
import { eventOf } from "../src/outbox/outbox.js";
import { FakePeer } from "./fake-peer.js";

const accepted: ServerMessage = { type: "run.accepted", conversation_id: "c1", run_id: "r1" };
const V1_ACCEPTED = '{"type":"run.accepted","conversation_id":"c1","run_id":"r1"}';

function fanoutWith(...peers: FakePeer[]): Fanout {
  const fanout = new Fanout();
  for (const p of peers) fanout.add(p);
  return fanout;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("Fanout", () => {
  it("serialises an event once for all v1 peers; only the requester's copy carries its request_id", () => {
    const [me, other, third] = [new FakePeer(), new FakePeer(), new FakePeer()];
    const fanout = fanoutWith(me, other, third);
    const stringify = vi.spyOn(JSON, "stringify");
    fanout.publish(eventOf(accepted, { peer: me, requestId: "s1" }));
    expect(stringify).toHaveBeenCalledTimes(2); // the shared copy, and the requester's own
    expect(me.frames).toEqual([
      '{"type":"run.accepted","conversation_id":"c1","run_id":"r1","request_id":"s1"}',
    ]);
    expect(other.frames).toEqual([V1_ACCEPTED]);
    expect(third.frames).toEqual([V1_ACCEPTED]);
  });

  it("an origin without a peer (a run nobody asked for live) reaches everyone without request_id", () => {
    const a = new FakePeer();
    fanoutWith(a).publish(eventOf(accepted, { requestId: "s1" }));
    expect(a.frames).toEqual([V1_ACCEPTED]);
  });

  it("an extension's own event reaches only the peers that enabled it", () => {
    const [v1, push] = [new FakePeer(), new FakePeer(["push"])];
    fanoutWith(v1, push).publish({ message: accepted, conversationId: "c1", feature: "push" });
    expect(v1.frames).toEqual([]);
    expect(push.frames).toEqual([V1_ACCEPTED]);
  });

  it("an extension's message type reaches only the peers that enabled it, without a hand-set feature", () => {
    const [v1, queue] = [new FakePeer(), new FakePeer([FEATURE_QUEUE])];
    const changed: ServerMessage = { type: "queue.changed", conversation_id: "c1", queued: [] };
    fanoutWith(v1, queue).publish(eventOf(changed, { peer: v1, requestId: "q1" }));
    expect(v1.frames).toEqual([]);
    expect(queue.frames).toEqual(['{"type":"queue.changed","conversation_id":"c1","queued":[]}']);
  });

  it("extension fields go only to peers that enabled them, after the v1 fields and a reply's request_id", () => {
    const [v1, resume, both] = [new FakePeer(), new FakePeer(["resume"]), new FakePeer(["resume", "x"])];
    const fanout = fanoutWith(v1, resume, both);
    fanout.publish({
      message: accepted,
      conversationId: "c1",
      replyTo: { peer: resume, requestId: "s1" },
      fields: { resume: { seq: 7 }, x: { extra: true } },
    });
    expect(v1.frames).toEqual([V1_ACCEPTED]);
    expect(resume.frames).toEqual([
      '{"type":"run.accepted","conversation_id":"c1","run_id":"r1","request_id":"s1","seq":7}',
    ]);
    expect(both.frames).toEqual([
      '{"type":"run.accepted","conversation_id":"c1","run_id":"r1","seq":7,"extra":true}',
    ]);
  });

  it("extension fields combine with delta.append: each variant is serialised once", () => {
    const peers = [
      new FakePeer(),
      new FakePeer(),
      new FakePeer([FEATURE_DELTA_APPEND]),
      new FakePeer([FEATURE_DELTA_APPEND, "resume"]),
      new FakePeer([FEATURE_DELTA_APPEND, "resume"]),
    ];
    const fanout = fanoutWith(...peers);
    const delta = (text: string, seq: number) => ({
      message: { type: "message.delta", conversation_id: "c1", message_id: "d1", text, ts: "t" } as const,
      conversationId: "c1",
      fields: { resume: { seq } },
    });
    fanout.publish(delta("Hello", 1));
    const stringify = vi.spyOn(JSON, "stringify");
    fanout.publish(delta("Hello world", 2));
    expect(stringify).toHaveBeenCalledTimes(3); // v1, append, append + seq
    expect(peers.map((p) => p.frames[1])).toEqual([
      '{"type":"message.delta","conversation_id":"c1","message_id":"d1","text":"Hello world","ts":"t"}',
      '{"type":"message.delta","conversation_id":"c1","message_id":"d1","text":"Hello world","ts":"t"}',
      '{"type":"message.delta","conversation_id":"c1","message_id":"d1","offset":5,"text":" world","ts":"t"}',
      '{"type":"message.delta","conversation_id":"c1","message_id":"d1","offset":5,"text":" world","ts":"t","seq":2}',
      '{"type":"message.delta","conversation_id":"c1","message_id":"d1","offset":5,"text":" world","ts":"t","seq":2}',
    ]);
    // Append deltas after a peer's first are compressed whatever their length; others use the transport's rule.
    expect(peers.map((p) => p.hints[1]?.compress)).toEqual([undefined, undefined, true, true, true]);
    expect(peers.map((p) => p.hints[0]?.compress)).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });

  it("lists its peers (a revoked device's peers are found here) and forgets removed ones", () => {
    const [a, b] = [new FakePeer(), new FakePeer()];
    const fanout = fanoutWith(a, b);
    fanout.remove(a);
    expect([...fanout.peers()]).toEqual([b]);
    expect(fanout.size).toBe(1);
    fanout.publish(eventOf(accepted));
    expect(a.frames).toEqual([]);
  });
});

describe("Dispatcher", () => {
  const ctx = { log: { error() {} } } as unknown as ServerContext;
  const dispatcher = new Dispatcher([
    { ping: () => ({ rule: "requester", reply: { type: "pong", ts: "t" } }) },
  ]);
  /** What the dispatcher hands the connection layer for `msg`. */
  const answer = (msg: ClientMessage) =>
    new Promise((resolve) => void dispatcher.dispatch(ctx, new FakePeer(), msg, resolve));

  it("routes a request to its table's handler; a type no table handles is not_implemented; a second hello is bad_request", async () => {
    expect(await answer({ type: "ping" })).toEqual({
      rule: "requester",
      reply: { type: "pong", ts: "t" },
    });
    expect(await answer({ type: "models.list" })).toEqual({
      error: { code: "not_implemented", message: "models.list is not implemented yet" },
    });
    const hello = { type: "hello", secret: "s", protocol_version: 1 } as const;
    expect(await answer(hello)).toEqual({
      error: { code: "bad_request", message: "already authenticated" },
    });
  });
});
