// The probe against a scripted WebSocket server on 127.0.0.1: what it records, what it rejects, and
// how it follows a run. The real servers it drives are tested through it in packages/server,
// packages/conformance and apps/server/reliability.
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { type WebSocket, WebSocketServer } from "ws";
import { answerOf, messageIdOf, Probe, runFrames } from "../src/index.js";

const TS = "2026-09-02T18:00:00.000Z";
const C = "c".repeat(32);

/** A server that answers `hello` with `ready` (enabling what `features` lists) and then sends `script`. */
async function scripted(script: (socket: WebSocket, hello: Record<string, unknown>) => void) {
  const server = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await new Promise((r) => server.once("listening", r));
  server.on("connection", (socket) => {
    socket.once("message", (data) => script(socket, JSON.parse(String(data)) as Record<string, unknown>));
  });
  servers.push(server);
  return `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const servers: WebSocketServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    for (const c of s.clients) c.terminate();
    await new Promise((r) => s.close(r));
  }
});

const ready = (features?: string[]) =>
  JSON.stringify({
    type: "ready",
    protocol_version: 1,
    server: "test",
    ts: TS,
    ...(features ? { features } : {}),
  });

describe("Probe", () => {
  it("records valid frames and reports invalid ones: extra fields, and extension fields on a v1 connection", async () => {
    const url = await scripted((socket) => {
      socket.send(ready());
      socket.send(JSON.stringify({ type: "pong", request_id: "x", ts: TS, extra: 1 }));
      socket.send(JSON.stringify({ type: "conversation.deleted", conversation_id: C, seq: 3 }));
      socket.send(JSON.stringify({ type: "pong", request_id: "y", ts: TS }));
    });
    const invalid: string[] = [];
    const probe = await Probe.connect(url, { secret: "s", onInvalid: (f) => invalid.push(f.error) });
    await probe.next("pong", (m) => m.request_id === "y");
    expect(probe.frames.map((m) => m.type)).toEqual(["ready", "pong"]);
    expect(invalid).toHaveLength(2);
    expect(invalid[0]).toBe("frame has fields the schema does not define");
    expect(probe.invalid.map((f) => f.error)).toEqual(invalid);
    probe.close();
  });

  it("lenient, it accepts extra fields, and holds frames to the features ready enabled", async () => {
    const url = await scripted((socket) => {
      socket.send(ready(["resume"]));
      socket.send(JSON.stringify({ type: "pong", request_id: "x", ts: TS, extra: 1 }));
      socket.send(JSON.stringify({ type: "conversation.deleted", conversation_id: C, seq: 3 }));
    });
    const probe = await Probe.connect(url, { secret: "s", strict: false, features: ["resume"] });
    await probe.nextAny((m) => m.type === "conversation.deleted");
    expect(probe.invalid).toEqual([]);
    expect(probe.features).toEqual(["resume"]);
    probe.close();
  });

  it("next reads in order: a frame that arrives in the same read as the awaited one is still unread", async () => {
    const url = await scripted((socket) => {
      socket.send(ready());
      setTimeout(() => {
        socket.send(JSON.stringify({ type: "pong", request_id: "a", ts: TS }));
        socket.send(JSON.stringify({ type: "pong", request_id: "b", ts: TS }));
      }, 20);
    });
    const probe = await Probe.connect(url, { secret: "s" });
    expect((await probe.next("pong")).request_id).toBe("a");
    expect((await probe.next("pong")).request_id).toBe("b");
    probe.close();
  });

  it("a wait fails as soon as the connection closes, with the wait's name", async () => {
    const url = await scripted((socket) => {
      socket.send(ready());
      setTimeout(() => socket.close(4000, "bye"), 20);
    });
    const probe = await Probe.connect(url, { secret: "s" });
    await expect(probe.next("pong")).rejects.toThrow(/closed \(4000\) before pong/);
    expect(probe.closeState).toEqual({ code: 4000, reason: "bye" });
  });

  it("follows a run by the message its message.start names, with its notices, whatever the ids", async () => {
    const url = await scripted((socket) => {
      const frames = [
        { type: "run.accepted", conversation_id: C, run_id: "r1", request_id: "q" },
        { type: "message.start", conversation_id: C, run_id: "r1", message_id: "m-any" },
        { type: "message.delta", conversation_id: C, message_id: "m-any", text: "Hi", ts: TS },
        {
          type: "message.complete",
          conversation_id: C,
          message_id: "n-1",
          text: "note",
          kind: "notice",
          ts: TS,
        },
        { type: "message.delta", conversation_id: C, message_id: "m-other", text: "no", ts: TS },
        { type: "message.complete", conversation_id: C, message_id: "m-any", text: "Hi!", ts: TS },
        { type: "run.finished", conversation_id: C, run_id: "r1", status: "completed" },
        {
          type: "message.complete",
          conversation_id: C,
          message_id: "n-2",
          text: "after",
          kind: "notice",
          ts: TS,
        },
      ];
      socket.send(ready());
      for (const f of frames) socket.send(JSON.stringify(f));
    });
    const probe = await Probe.connect(url, { secret: "s" });
    const frames = await probe.run("r1");
    await probe.nextAny((m) => m.type === "message.complete" && m.message_id === "n-2");
    expect(probe.invalid).toEqual([]);
    expect(frames.map((m) => ("message_id" in m ? m.message_id : m.type))).toEqual([
      "m-any",
      "m-any",
      "n-1",
      "m-any",
      "run.finished",
    ]);
    expect(runFrames(probe.frames, "r1")[0]?.type).toBe("run.accepted");
    expect(messageIdOf(probe.frames, "r1")).toBe("m-any");
    expect(answerOf(probe.frames, "r1")?.text).toBe("Hi!");
    expect(await probe.runMessageId("r1")).toBe("m-any");
    probe.close();
  });
});
