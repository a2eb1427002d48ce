import { request } from "node:http";
import { CLOSE_CODES, LIMITS } from "@pheby/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HARD_MAX_PAYLOAD } from "../src/transport/ws/server.js";
import {
  createConversation,
  pingOfSize,
  RawClient,
  SECRET,
  send,
  startServer,
  type TestServer,
} from "./helpers.js";

/** Bytes this client has written to its TCP socket so far (what went on the wire). */
function written(c: RawClient): number {
  return (c.ws as unknown as { _socket: { bytesWritten: number } })._socket.bytesWritten;
}

/** The Sec-WebSocket-Extensions a raw upgrade offering `offer` gets back. */
function negotiate(url: string, offer: string): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/ws`, {
      headers: {
        connection: "Upgrade",
        upgrade: "websocket",
        "sec-websocket-version": "13",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
        "sec-websocket-extensions": offer,
      },
    });
    req.on("upgrade", (res, socket) => {
      socket.destroy();
      resolve(res.headers["sec-websocket-extensions"] as string | undefined);
    });
    req.on("error", reject);
    req.end();
  });
}

describe("permessage-deflate (default on)", () => {
  let ts: TestServer;
  beforeAll(async () => {
    ts = await startServer();
  });
  afterAll(() => ts.cleanup());

  it("is negotiated with ws (Node client), and with a bare offer as OkHttp and browsers send it", async () => {
    const c = await RawClient.connect(ts.wsUrl);
    expect(c.ws.extensions).toContain("permessage-deflate");
    c.close();
    // OkHttp offers `permessage-deflate` without parameters and fails the handshake if the
    // answer carries client_max_window_bits; browsers add client_max_window_bits to the offer.
    const accepted = "permessage-deflate; client_no_context_takeover";
    expect(await negotiate(ts.url, "permessage-deflate")).toBe(accepted);
    expect(await negotiate(ts.url, "permessage-deflate; client_max_window_bits")).toBe(accepted);
  });

  it("short frames go out uncompressed (no zlib context for idle peers); a long answer is compressed", async () => {
    const c = await RawClient.open(ts.wsUrl);
    const wire: Buffer[] = [];
    (c.ws as unknown as { _socket: NodeJS.ReadableStream })._socket.prependListener("data", (b: Buffer) => {
      wire.push(b);
    });
    c.send({ type: "hello", secret: SECRET, protocol_version: 1 });
    await c.next("ready");
    await c.ok({ type: "ping" }, "pong");
    const plain = Buffer.concat(wire).toString("latin1");
    expect(plain).toContain('"type":"ready"');
    expect(plain).toContain('"type":"pong"');

    wire.length = 0;
    const runId = await send(c, await createConversation(c), "/sim long 20000");
    const frames = await c.run(runId);
    const complete = frames.find((m) => m.type === "message.complete");
    expect(complete && "text" in complete && complete.text).toHaveLength(20_000);
    // 20,000 characters arrived (at least twice: a delta and the complete) in far fewer bytes.
    expect(Buffer.concat(wire).length).toBeLessThan(10_000);
    c.close();
  });

  it("limits apply to the inflated size: a compressed 2 MiB frame is accepted, 2 MiB + 1 gets too_large", async () => {
    const ok = await RawClient.connect(ts.wsUrl);
    const before = written(ok);
    ok.send(pingOfSize(LIMITS.frameBytes));
    expect((await ok.next("pong")).request_id).toBe("big");
    expect(written(ok) - before).toBeLessThan(64 * 1024);
    ok.close();

    const big = await RawClient.connect(ts.wsUrl);
    big.send(pingOfSize(LIMITS.frameBytes + 1));
    expect((await big.next("error")).error.code).toBe("too_large");
    expect((await big.closed).code).toBe(CLOSE_CODES.messageTooBig);
  });

  it("a small frame that inflates past the hard cap closes 1009; the server goes on", async () => {
    const other = await RawClient.connect(ts.wsUrl);
    const bomb = await RawClient.connect(ts.wsUrl);
    const before = written(bomb);
    bomb.send(pingOfSize(HARD_MAX_PAYLOAD * 4));
    expect((await bomb.closed).code).toBe(CLOSE_CODES.messageTooBig);
    // 8 MiB of JSON went as a few KiB: the cap is enforced on what inflating produced.
    expect(written(bomb) - before).toBeLessThan(64 * 1024);
    await other.ok({ type: "ping" }, "pong");
    other.close();
  });
});

it("compression: false does not offer permessage-deflate", async () => {
  const ts = await startServer({ compression: false });
  try {
    expect(await negotiate(ts.url, "permessage-deflate")).toBeUndefined();
    const c = await RawClient.connect(ts.wsUrl);
    expect(c.ws.extensions).toBe("");
    c.close();
  } finally {
    await ts.cleanup();
  }
});
