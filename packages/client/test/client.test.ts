import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  backoffDelay,
  downloadAttachment,
  httpBase,
  PhebyClient,
  PhebyError,
  pairDevice,
  type WebSocketConstructor,
} from "../src/index.js";
import { refusingUpgrades, ScriptedPeer, TS } from "./peer.js";

let peer: ScriptedPeer;
const clients: PhebyClient[] = [];
const client = (extra: Partial<ConstructorParameters<typeof PhebyClient>[0]> = {}) => {
  const c = new PhebyClient({
    url: peer.url,
    secret: "s3cret",
    reconnect: { initialDelayMs: 5, maxDelayMs: 20 },
    ...extra,
  });
  clients.push(c);
  return c;
};

beforeEach(async () => {
  peer = await ScriptedPeer.start();
});
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await peer.close();
});

describe("PhebyClient handshake", () => {
  it("sends hello with the secret and protocol version, and resolves with ready", async () => {
    const c = client();
    const ready = await c.connect();
    expect(ready).toMatchObject({ type: "ready", protocol_version: 1, server: "pheby" });
    expect(peer.connections[0]!.received[0]).toMatchObject({
      type: "hello",
      secret: "s3cret",
      protocol_version: 1,
    });
    expect(c.state).toBe("open");
  });

  it("rejects a wrong secret with unauthorized, and does not reconnect", async () => {
    const c = client({ secret: "wrong" });
    const states: string[] = [];
    c.onState((s) => states.push(s));
    await expect(c.connect()).rejects.toMatchObject({ code: "unauthorized" });
    await new Promise((r) => setTimeout(r, 50));
    expect(c.state).toBe("failed");
    expect(peer.connections).toHaveLength(1);
    expect(states).toEqual(["connecting", "failed"]);
  });

  it("rejects with connection_closed when nothing listens, saying the connection was refused", async () => {
    const url = peer.url;
    await peer.close();
    const c = new PhebyClient({ url, secret: "s3cret" });
    const err = (await c.connect().catch((e: unknown) => e)) as PhebyError;
    expect(err).toBeInstanceOf(PhebyError);
    expect(err.code).toBe("connection_closed");
    expect(err.message).toBe(
      `connection refused by ${new URL(url).host} (is the server running on that port?)`,
    );
    expect((err.cause as { code?: string }).code).toBe("ECONNREFUSED");
    expect(c.state).toBe("closed");
    peer = await ScriptedPeer.start();
  });
});

describe("PhebyClient says why a connection could not be made", () => {
  const failure = (url: string) =>
    new PhebyClient({ url, secret: "s3cret", reconnect: false }).connect().then(
      () => expect.unreachable("connected"),
      (e: unknown) => e as PhebyError,
    );

  it("an HTTP status instead of the upgrade: the status, on the error too", async () => {
    const http = await refusingUpgrades(403);
    try {
      const err = await failure(`ws://127.0.0.1:${http.port}/ws`);
      expect(err).toMatchObject({ code: "connection_closed", status: 403 });
      expect(err.message).toMatch(
        new RegExp(
          `^127\\.0\\.0\\.1:${http.port} answered the WebSocket upgrade with HTTP 403 \\(is /ws the server's WebSocket endpoint`,
        ),
      );
    } finally {
      await http.close();
    }
  });

  it("a host name that does not resolve (.invalid never does, RFC 6761): DNS", async () => {
    const err = await failure("ws://pheby-test.invalid/ws");
    expect(err.code).toBe("connection_closed");
    expect(err.message).toMatch(
      /^cannot resolve the host name pheby-test\.invalid \(DNS: (ENOTFOUND|EAI_AGAIN)\)$/,
    );
  }, 60_000); // a resolver that never answers takes its own timeout to say EAI_AGAIN

  it("TLS to a port that does not speak it: the TLS handshake failed", async () => {
    const http = await refusingUpgrades(403);
    try {
      const err = await failure(`wss://127.0.0.1:${http.port}/ws`);
      expect(err.code).toBe("connection_closed");
      expect(err.message).toMatch(
        new RegExp(`^TLS handshake with 127\\.0\\.0\\.1:${http.port} failed: .*wrong version number`),
      );
    } finally {
      await http.close();
    }
  });

  it("a runtime that gives no reason (browsers): the close code, before the socket opened", async () => {
    // The WHATWG WebSocket's 'error' event carries nothing; emulate that on top of a refused `ws` socket.
    const { default: WS } = await import("ws");
    class Silent extends WS {
      override addEventListener(type: string, listener: (event: unknown) => void): void {
        super.addEventListener(
          type as "open",
          type === "error" ? () => listener({ type: "error" }) : (listener as () => void),
        );
      }
    }
    const err = (await new PhebyClient({
      url: "ws://127.0.0.1:1/ws",
      secret: "s3cret",
      reconnect: false,
      WebSocket: Silent as unknown as WebSocketConstructor,
    })
      .connect()
      .catch((e: unknown) => e)) as PhebyError;
    expect(err.message).toBe(
      "closed (1006) before the WebSocket to ws://127.0.0.1:1/ws opened (the runtime does not say why)",
    );
  });

  it("a file request to a server that is not there: connection_closed saying it was refused", async () => {
    const url = peer.url;
    await peer.close();
    const err = (await downloadAttachment(
      { url, secret: "s3cret" },
      "0123456789abcdef0123456789abcdef",
    ).catch((e: unknown) => e)) as PhebyError;
    expect(err).toBeInstanceOf(PhebyError);
    expect(err.message).toBe(
      `connection refused by ${new URL(url).host} (is the server running on that port?)`,
    );
    peer = await ScriptedPeer.start();
  });
});

describe("PhebyClient requests and events", () => {
  it("resolves a request with its typed reply, matched by request_id, and still emits broadcasts", async () => {
    const c = client();
    await c.connect();
    const updates: string[] = [];
    c.on("conversation.updated", (m) => updates.push(m.name));
    const updated = c.next("conversation.updated");
    const created = await c.request({ type: "conversation.create", name: "Hi" });
    expect(created).toMatchObject({ type: "conversation.created", conversation_id: "c1", name: "Hi" });
    expect(created.request_id).toMatch(/^r\d+$/);
    await updated;
    expect(updates).toEqual(["Hi"]);
  });

  it("ignores a same-type frame without its request_id", async () => {
    const c = client();
    await c.connect();
    peer.handler = (frame) =>
      frame.type === "ping"
        ? [
            { type: "pong", ts: TS },
            { type: "pong", ts: TS, request_id: frame.request_id },
          ]
        : undefined;
    const pongs: unknown[] = [];
    c.on("pong", (m) => pongs.push(m));
    const reply = await c.request({ type: "ping", request_id: "mine" });
    expect(reply.request_id).toBe("mine");
    expect(pongs).toHaveLength(2);
  });

  it("rejects with a PhebyError carrying the server's code", async () => {
    const c = client();
    await c.connect();
    peer.handler = (frame) => [
      { type: "error", request_id: frame.request_id, error: { code: "run_active", message: "busy" }, ts: TS },
    ];
    const err = await c.request({ type: "chat.send", conversation_id: "c1", text: "x" }).catch((e) => e);
    expect(err).toBeInstanceOf(PhebyError);
    expect(err).toMatchObject({ code: "run_active", message: "busy" });
  });

  it("times out a request that gets no reply", async () => {
    const c = client({ requestTimeoutMs: 50 });
    await c.connect();
    peer.handler = () => undefined;
    await expect(c.request({ type: "conversation.list" })).rejects.toMatchObject({ code: "timeout" });
  });

  it("reports frames that fail protocol validation instead of delivering them", async () => {
    const c = client();
    await c.connect();
    const invalid = new Promise((resolve) => c.onInvalidFrame(resolve));
    const delivered: unknown[] = [];
    c.on("*", (m) => delivered.push(m));
    peer.broadcast({ type: "run.finished", conversation_id: "c", run_id: "r", status: "done" });
    expect(await invalid).toMatchObject({ error: { code: "bad_request" } });
    expect(delivered).toEqual([]);
  });

  it("refuses requests while disconnected", async () => {
    const c = client();
    await expect(c.request({ type: "ping" })).rejects.toMatchObject({ code: "connection_closed" });
  });
});

describe("PhebyClient reconnect", () => {
  it("rejects pending requests on a drop, reconnects, redoes hello and resyncs followed conversations", async () => {
    const c = client();
    await c.connect();
    c.follow("a");
    c.follow("gone");
    peer.handler = () => undefined;
    const pending = c.request({ type: "conversation.list" });
    const resync = new Promise<Map<string, unknown>>((resolve) => c.onResync(resolve));
    const { defaultHandler } = await import("./peer.js");
    peer.handler = defaultHandler;
    peer.connections[0]!.socket.terminate();
    await expect(pending).rejects.toMatchObject({ code: "connection_closed" });
    const snapshots = await resync;
    expect([...snapshots.keys()]).toEqual(["a"]);
    expect(peer.connections).toHaveLength(2);
    expect(peer.connections[1]!.received.map((f) => f.type)).toEqual([
      "hello",
      "conversation.open",
      "conversation.open",
    ]);
    expect(c.state).toBe("open");
    // "gone" was deleted meanwhile, so it is no longer followed.
    const again = await c.resync();
    expect([...again.keys()]).toEqual(["a"]);
  });

  it("keeps retrying with backoff while the server is down", async () => {
    const c = client();
    await c.connect();
    const url = peer.url;
    const port = Number(new URL(url).port);
    const states: string[] = [];
    c.onState((s) => states.push(s));
    await peer.close();
    // Polled, not a fixed wait: a loaded machine may take a while to deliver the close.
    while ((c.state as string) === "open") await new Promise((r) => setTimeout(r, 10));
    expect(c.state).toBe("reconnecting");
    // Bring a peer back on the same port; the client finds it by itself.
    const { WebSocketServer } = await import("ws");
    const revived = new WebSocketServer({ host: "127.0.0.1", port, path: "/ws" });
    revived.on("connection", (socket) =>
      socket.on("message", (data) => {
        const f = JSON.parse(String(data));
        if (f.type === "hello")
          socket.send(
            JSON.stringify({
              type: "ready",
              protocol_version: 1,
              server: "pheby",
              ts: TS,
              request_id: f.request_id,
            }),
          );
      }),
    );
    while (c.state !== "open") await new Promise((r) => setTimeout(r, 10));
    expect(states[0]).toBe("reconnecting");
    expect(states.at(-1)).toBe("open");
    c.close();
    for (const s of revived.clients) s.terminate();
    await new Promise((r) => revived.close(r));
    peer = await ScriptedPeer.start();
  });

  it("treats a missed pong as a dead connection and reconnects", async () => {
    const c = client({ pingIntervalMs: 30 });
    await c.connect();
    peer.handler = (frame) =>
      frame.type === "hello"
        ? [{ type: "ready", protocol_version: 1, server: "pheby", ts: TS, request_id: frame.request_id }]
        : undefined;
    await peer.waitForConnections(2);
    expect(peer.connections[0]!.received.some((f) => f.type === "ping")).toBe(true);
  });

  it("does not reconnect after close()", async () => {
    const c = client();
    await c.connect();
    c.close();
    await new Promise((r) => setTimeout(r, 50));
    expect(c.state).toBe("closed");
    expect(peer.connections).toHaveLength(1);
  });
});

/** Answer a hello with `error` and close with `code` (the server's way of refusing a handshake). */
function refuseHellos(code: number, error: { code: string; message: string }, reason = "") {
  peer.handler = (frame, conn) => {
    if (frame.type !== "hello") return undefined;
    setTimeout(() => conn.socket.close(code, reason), 5);
    return [{ type: "error", request_id: frame.request_id, error, ts: TS }];
  };
}

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("PhebyClient close codes (docs/protocol.md, close codes)", () => {
  it.each([
    [4401, "unauthorized"],
    [4426, "version_mismatch"],
  ] as const)("%i (%s) is final: no retry loop after a drop", async (code, errorCode) => {
    const c = client();
    await c.connect();
    refuseHellos(code, { code: errorCode, message: "refused" });
    peer.connections[0]!.socket.terminate();
    while (c.state !== "failed") await wait(10);
    await wait(100); // many backoff periods (5–20 ms) for a retry loop to show
    expect(peer.connections).toHaveLength(2);
  });

  it.each([4408, 4503, 1001, 1009, 1006])("%i: reconnects with backoff", async (code) => {
    const c = client();
    await c.connect();
    const socket = peer.connections[0]!.socket;
    if (code === 1006)
      socket.terminate(); // no close frame at all
    else socket.close(code, "bye");
    await peer.waitForConnections(2);
    while (c.state !== "open") await wait(10);
    expect(peer.connections[1]!.received[0]).toMatchObject({ type: "hello" });
  });

  it("4429 waits the seconds its close reason names, then reconnects", async () => {
    const c = client();
    await c.connect();
    const closedAt = Date.now();
    peer.connections[0]!.socket.close(4429, "locked out; retry after 1 s");
    await peer.waitForConnections(2);
    // A lower bound only: the backoff alone (5–20 ms) would have retried long before.
    expect(Date.now() - closedAt).toBeGreaterThanOrEqual(990);
    while (c.state !== "open") await wait(10);
  });

  it("4429 naming no time waits lockedOutDelayMs (Kotlin's lockedOutDelay), then reconnects", async () => {
    const c = client({ reconnect: { initialDelayMs: 5, maxDelayMs: 20, lockedOutDelayMs: 300 } });
    await c.connect();
    const closedAt = Date.now();
    peer.connections[0]!.socket.close(4429, "");
    await peer.waitForConnections(2);
    expect(Date.now() - closedAt).toBeGreaterThanOrEqual(290);
    while (c.state !== "open") await wait(10);
  });

  it("a hello answered rate_limited while reconnecting: waits the seconds of its message, then succeeds", async () => {
    const c = client();
    await c.connect();
    refuseHellos(4429, {
      code: "rate_limited",
      message: "Too many failed hellos from this address; retry after 1 s",
    });
    const refusedAt = Date.now();
    peer.connections[0]!.socket.terminate();
    await peer.waitForConnections(2);
    // Only once the second hello has been refused (the handler answers as the frame arrives).
    while (!peer.connections[1]!.received.some((f) => f.type === "hello")) await wait(5);
    const { defaultHandler } = await import("./peer.js");
    peer.handler = defaultHandler;
    await peer.waitForConnections(3);
    expect(Date.now() - refusedAt).toBeGreaterThanOrEqual(990);
    while (c.state !== "open") await wait(10);
    expect(c.state).toBe("open");
  });

  it("a lockout refused as the socket opens (no reply to hello, only the 4429 close): rate_limited with the wait", async () => {
    const c = client();
    peer.handler = (frame, conn) => {
      if (frame.type !== "hello") return undefined;
      setTimeout(() => conn.socket.close(4429, "locked out; retry after 3 s"), 5);
      // The server's error went out before it read the hello: it carries no request_id.
      return [{ type: "error", error: { code: "rate_limited", message: "locked out" }, ts: TS }];
    };
    const err = await c.connect().catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "rate_limited", retryAfterMs: 3_000 });
    while ((c.state as string) === "connecting") await wait(10);
    expect(c.state).toBe("closed");
  });

  it("a lockout at connect(): rejects with rate_limited and the wait, not as a final auth failure", async () => {
    const c = client();
    refuseHellos(
      4429,
      { code: "rate_limited", message: "Too many failed hellos from this address; retry after 287 s" },
      "locked out; retry after 287 s",
    );
    const err = await c.connect().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PhebyError);
    expect(err).toMatchObject({ code: "rate_limited", retryAfterMs: 287_000 });
    while ((c.state as string) === "connecting") await wait(10);
    expect(c.state).toBe("closed");
  });
});

describe("pairDevice under a lockout", () => {
  const uri = () => `pheby://pair?url=${encodeURIComponent(peer.url)}&code=123456`;

  it("a rate_limited answer to the pairing hello: rejects with rate_limited and the wait its message names", async () => {
    refuseHellos(
      4429,
      { code: "rate_limited", message: "Too many failed hellos from this address; retry after 287 s" },
      "locked out; retry after 287 s",
    );
    const err = await pairDevice(uri()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PhebyError);
    expect(err).toMatchObject({ code: "rate_limited", retryAfterMs: 287_000 });
  });

  it("only the 4429 close (no error frame): rate_limited with the wait its reason names, not connection_closed", async () => {
    peer.handler = (frame, conn) => {
      if (frame.type === "hello") conn.socket.close(4429, "locked out; retry after 3 s");
      return undefined;
    };
    const err = await pairDevice(uri()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PhebyError);
    expect(err).toMatchObject({ code: "rate_limited", retryAfterMs: 3_000 });
  });
});

describe("helpers", () => {
  it("backoffDelay grows exponentially up to the cap, with full jitter", () => {
    const max = () => 1;
    expect(
      [0, 1, 2, 3, 10].map((a) => backoffDelay(a, { initialDelayMs: 100, maxDelayMs: 1000 }, max)),
    ).toEqual([100, 200, 400, 800, 1000]);
    expect(backoffDelay(5, {}, () => 0)).toBe(0);
  });

  it("PhebyError: a rate_limited error takes the wait its message names unless given one; other codes do not", () => {
    expect(new PhebyError("rate_limited", "locked out; retry after 5 s").retryAfterMs).toBe(5_000);
    expect(
      new PhebyError("rate_limited", "locked out; retry after 5 s", { retryAfterMs: 7_000 }).retryAfterMs,
    ).toBe(7_000);
    expect(new PhebyError("rate_limited", "locked out").retryAfterMs).toBeUndefined();
    expect(new PhebyError("bad_request", "retry after 5 s").retryAfterMs).toBeUndefined();
  });

  it("httpBase derives the HTTP origin from the WebSocket URL", () => {
    expect(httpBase("wss://pheby.example.com/ws")).toBe("https://pheby.example.com");
    expect(httpBase("ws://127.0.0.1:8620/ws")).toBe("http://127.0.0.1:8620");
    expect(httpBase("https://h.example/pheby/ws?x=1")).toBe("https://h.example/pheby");
  });
});

describe("PhebyClient with resume", () => {
  const ready = (request_id: unknown, features: string[]) => ({
    type: "ready",
    protocol_version: 1,
    server: "pheby",
    features,
    ts: TS,
    request_id,
  });
  const renamed = (seq: number, name: string) => ({
    type: "conversation.renamed",
    conversation_id: "a",
    name,
    seq,
  });

  it("stamps chat.send and conversation.create with a client_message_id (keeping one given), nothing else", async () => {
    const { defaultHandler } = await import("./peer.js");
    peer.handler = (frame, conn) =>
      frame.type === "chat.send"
        ? [{ type: "run.accepted", conversation_id: "c1", run_id: "r1", request_id: frame.request_id }]
        : defaultHandler(frame, conn);
    const c = client();
    await c.connect();
    // In FEATURE_PRIORITY order.
    expect(peer.connections[0]!.received[0]).toMatchObject({
      features: [
        "delta.append",
        "resume",
        "queue",
        "push",
        "activity",
        "modes",
        "inbox",
        "workspaces",
        "changes",
      ],
    });
    await c.request({ type: "conversation.create" });
    await c.request({ type: "chat.send", conversation_id: "c1", text: "x" });
    await c.request({ type: "chat.send", conversation_id: "c1", text: "y", client_message_id: "mine" });
    await c.request({ type: "ping" });
    const ids = peer.connections[0]!.received.slice(1).map((f) => f.client_message_id);
    expect(ids[0]).toMatch(/^[0-9a-f]{32}$/);
    expect(ids[1]).toMatch(/^[0-9a-f]{32}$/);
    expect(ids[0]).not.toBe(ids[1]);
    expect(ids.slice(2)).toEqual(["mine", undefined]);

    const plain = client({ features: [] });
    await plain.connect();
    await plain.request({ type: "conversation.create" });
    expect(peer.connections[1]!.received[0]).not.toHaveProperty("features");
    expect(peer.connections[1]!.received[1]).not.toHaveProperty("client_message_id");
  });

  it("sends a send whose reply was lost again after the reconnect, same client_message_id, to a resume server", async () => {
    const { defaultHandler } = await import("./peer.js");
    let answer = false;
    peer.handler = (frame, conn) => {
      if (frame.type === "hello") return [ready(frame.request_id, ["resume"])];
      if (frame.type !== "chat.send") return defaultHandler(frame, conn);
      return answer
        ? [{ type: "run.accepted", conversation_id: "c1", run_id: "r1", request_id: frame.request_id }]
        : [];
    };
    const c = client();
    await c.connect();
    const sent = c.request({ type: "chat.send", conversation_id: "c1", text: "x" });
    while (peer.connections[0]!.received.length < 2) await new Promise((r) => setTimeout(r, 5));
    answer = true;
    peer.connections[0]!.socket.terminate();
    expect(await sent).toMatchObject({ type: "run.accepted", run_id: "r1" });
    const [first, again] = peer.connections.map((conn) => conn.received.find((f) => f.type === "chat.send")!);
    expect(again!.client_message_id).toBe(first!.client_message_id);
  });

  it("does not send it again to a server without resume, which might do it twice: it rejects", async () => {
    const { defaultHandler } = await import("./peer.js");
    peer.handler = (frame, conn) => (frame.type === "chat.send" ? [] : defaultHandler(frame, conn));
    const c = client();
    await c.connect();
    const sent = c.request({ type: "chat.send", conversation_id: "c1", text: "x" });
    while (peer.connections[0]!.received.length < 2) await new Promise((r) => setTimeout(r, 5));
    peer.connections[0]!.socket.terminate();
    await expect(sent).rejects.toMatchObject({ code: "connection_closed" });
    await peer.waitForConnections(2);
    await c.request({ type: "ping" }).catch(() => undefined);
    expect(peer.connections[1]!.received.some((f) => f.type === "chat.send")).toBe(false);
  });

  it("resumes a followed conversation from the last seq, holding back its events until the answer", async () => {
    const { defaultHandler } = await import("./peer.js");
    peer.handler = (frame, conn) => {
      if (frame.type === "hello") {
        // On the second connection, a live event (seq 7) arrives before the client's re-open.
        return peer.connections.length === 1
          ? [ready(frame.request_id, ["resume"])]
          : [ready(frame.request_id, ["resume"]), renamed(7, "seven")];
      }
      if (frame.type === "conversation.open" && frame.since_seq !== undefined) {
        return [
          {
            type: "conversation.resumed",
            conversation_id: "a",
            from_seq: frame.since_seq,
            to_seq: 7,
            request_id: frame.request_id,
          },
          renamed(6, "six"),
          renamed(7, "seven"),
        ];
      }
      return defaultHandler(frame, conn);
    };
    const c = client();
    await c.connect();
    c.follow("a");
    const names: string[] = [];
    c.on("conversation.renamed", (m) => names.push(m.name));
    peer.broadcast(renamed(5, "five"));
    while (c.position("a") !== 5) await new Promise((r) => setTimeout(r, 5));
    const resync = new Promise<Map<string, unknown>>((resolve) => c.onResync(resolve));
    peer.connections[0]!.socket.terminate();
    // Resumed: nothing to replace, so not among the snapshots (the missed events reached handlers).
    const answers = await resync;
    expect(answers.has("a")).toBe(false);
    expect(peer.connections[1]!.received[1]).toMatchObject({
      type: "conversation.open",
      conversation_id: "a",
      since_seq: 5,
    });
    await c.request({ type: "ping" });
    expect(names).toEqual(["five", "six", "seven"]);
    expect(c.position("a")).toBe(7);
  });
});
