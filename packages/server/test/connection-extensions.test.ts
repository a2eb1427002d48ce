// The connection layer's extension hooks, over the in-memory transport: an extension registered with
// Connections adds its fields to `ready` and to direct replies, sends its first frames after `ready`,
// learns when the connection closes, and may accept a credential instead of the secret; a connection
// that did not enable it sees none of that. The server's own registrations are checked end to end.
import { FEATURE_DEVICES, FEATURE_RESUME, FEATURES, type ServerMessage } from "@pheby/protocol";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { Lockout } from "../src/auth/lockout.js";
import { OWNER } from "../src/auth/principal.js";
import { Connections } from "../src/connection/connection.js";
import type { ConnectionExtension } from "../src/connection/extension.js";
import type { ServerContext } from "../src/handlers/context.js";
import { Dispatcher } from "../src/handlers/index.js";
import { Fanout } from "../src/outbox/fanout.js";
import type { Peer } from "../src/outbox/outbox.js";
import { MemoryTransport } from "../src/transport/memory.js";
import { RawClient, SECRET, startServer } from "./helpers.js";

const HOOKED = "test.hooked";
const TS = "2026-09-02T18:00:00.000Z";
/** A code of a valid form (the decoder checks its length and alphabet). */
const GOOD = "abcdefghijklmnopqrstuvwxyz012345";

/** A Connections with one hooked extension and a pairing-like credential, and what the hooks saw. */
function setup() {
  const closed: Peer[] = [];
  const hooked: ConnectionExtension = {
    feature: HOOKED,
    ready: () => ({ hooked: { hello: true } }),
    afterReady: () => [{ type: "pong", ts: TS }],
    replyFields: (_connection, reply) => (reply.type === "pong" ? { hooked_seq: 7 } : undefined),
    closed: (connection) => closed.push(connection),
  };
  const pairing: ConnectionExtension = {
    feature: FEATURE_DEVICES,
    credential: {
      presented: (hello) => hello.pairing_code !== undefined,
      redeem: (hello) =>
        hello.pairing_code === GOOD
          ? {
              principal: { kind: "device", deviceId: "d1" },
              ready: { device: { device_id: "d1", device_secret: "x" } },
            }
          : { refused: "Invalid test code" },
    },
  };
  const clock = { now: () => Date.parse(TS) };
  const fanout = new Fanout();
  const ctx = { clock, log: pino({ level: "silent" }), outbox: fanout } as unknown as ServerContext;
  const connections = new Connections({
    ctx,
    dispatcher: new Dispatcher([{ ping: () => ({ rule: "requester", reply: { type: "pong", ts: TS } }) }]),
    fanout,
    settings: {
      authenticate: (secret) => (secret === SECRET ? OWNER : undefined),
      lockout: new Lockout({ maxFailures: 5, windowMs: 60_000, durationMs: 300_000 }, clock),
      authTimeoutMs: 10_000,
      serverName: "hooks",
    },
    extensions: [hooked, pairing],
  });
  return { transport: new MemoryTransport(connections), closed };
}

/** A raw in-memory client: the frames it received, as strings, and a way to wait for the n-th. */
async function client(transport: MemoryTransport) {
  const socket = transport.connect();
  const frames: string[] = [];
  let wake: () => void = () => {};
  socket.addEventListener("message", (e) => {
    frames.push(String(e.data));
    wake();
  });
  const ended = new Promise<number>((resolve) => socket.addEventListener("close", (e) => resolve(e.code)));
  await new Promise<void>((resolve) => socket.addEventListener("open", () => resolve()));
  const count = async (n: number) => {
    while (frames.length < n) await new Promise<void>((resolve) => (wake = resolve));
    return frames.slice(0, n);
  };
  return { socket, frames, count, ended, send: (m: unknown) => socket.send(JSON.stringify(m)) };
}

describe("connection extension hooks", () => {
  it("a connection that enabled the extension gets its ready fields, first frames and reply fields; its close is reported", async () => {
    const { transport, closed } = setup();
    const c = await client(transport);
    c.send({ type: "hello", secret: SECRET, protocol_version: 1, features: [HOOKED], request_id: "h" });
    c.send({ type: "ping", request_id: "p" });
    expect(await c.count(3)).toEqual([
      `{"type":"ready","request_id":"h","protocol_version":1,"server":"hooks","features":["${HOOKED}"],"hooked":{"hello":true},"ts":"${TS}"}`,
      `{"type":"pong","ts":"${TS}"}`,
      `{"type":"pong","ts":"${TS}","request_id":"p","hooked_seq":7}`,
    ]);
    expect(closed).toEqual([]);
    c.socket.close();
    await c.ended;
    await transport.close();
    expect(closed).toHaveLength(1);
  });

  it("a connection that did not enable it sees none of it, byte for byte v1", async () => {
    const { transport, closed } = setup();
    const c = await client(transport);
    c.send({ type: "hello", secret: SECRET, protocol_version: 1, request_id: "h" });
    c.send({ type: "ping", request_id: "p" });
    expect(await c.count(2)).toEqual([
      `{"type":"ready","request_id":"h","protocol_version":1,"server":"hooks","ts":"${TS}"}`,
      `{"type":"pong","ts":"${TS}","request_id":"p"}`,
    ]);
    c.socket.close();
    await c.ended;
    await transport.close();
    expect(closed).toEqual([]);
  });

  it("an extension's credential authenticates a hello without the secret; a refused one is unauthorized and 4401", async () => {
    const { transport } = setup();
    const ok = await client(transport);
    ok.send({ type: "hello", protocol_version: 1, features: [FEATURE_DEVICES], pairing_code: GOOD });
    expect(await ok.count(1)).toEqual([
      `{"type":"ready","protocol_version":1,"server":"hooks","features":["devices"],"device":{"device_id":"d1","device_secret":"x"},"ts":"${TS}"}`,
    ]);
    const bad = await client(transport);
    bad.send({
      type: "hello",
      protocol_version: 1,
      features: [FEATURE_DEVICES],
      pairing_code: `${GOOD}x`,
      request_id: "b",
    });
    expect(await bad.ended).toBe(4401);
    expect(bad.frames).toEqual([
      `{"type":"error","request_id":"b","error":{"code":"unauthorized","message":"Invalid test code"},"ts":"${TS}"}`,
    ]);
    await transport.close();
  });
});

describe("the server's registered extensions", () => {
  for (const resume of [true, false]) {
    it(`offer every feature @pheby/protocol defines${resume ? "" : ", less resume when it is off"}`, async () => {
      const ts = await startServer({ transport: "memory", resume });
      try {
        const c = await RawClient.connect(ts.wsUrl, { features: FEATURES });
        const ready = c.frames.find(
          (m): m is Extract<ServerMessage, { type: "ready" }> => m.type === "ready",
        );
        expect(ready?.features).toEqual(resume ? FEATURES : FEATURES.filter((f) => f !== FEATURE_RESUME));
        c.close();
      } finally {
        await ts.cleanup();
      }
    });
  }
});
