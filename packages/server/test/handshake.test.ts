import { CLOSE_CODES, LIMITS } from "@pheby/protocol";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { RawClient, SECRET, startServer, type TestServer } from "./helpers.js";

let ts: TestServer;
let now = Date.parse("2026-09-02T18:00:00Z");
const clock = { now: () => now };

beforeEach(async () => {
  now = Date.parse("2026-09-02T18:00:00Z");
  ts = await startServer({ clock, authTimeoutMs: 200, lockout: { durationMs: 60_000 } });
});
afterEach(() => ts.cleanup());

const hello = (extra: Record<string, unknown> = {}) => ({
  type: "hello",
  secret: SECRET,
  protocol_version: 1,
  ...extra,
});

async function failHello(headers?: Record<string, string>, frame = hello({ secret: "wrong" })) {
  const c = await RawClient.open(ts.wsUrl, { headers });
  c.send(frame);
  return { error: await c.next("error"), close: await c.closed };
}

describe("HTTP", () => {
  it("GET /health answers {status: ok} and nothing else", async () => {
    const res = await fetch(`${ts.url}/health`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok" });
  });

  it("unknown routes get a JSON 404 that reveals nothing", async () => {
    // (/attachments/* is an authenticated route: see attachments-http.test.ts.)
    for (const path of ["/nope", "/../etc/passwd", "/attachment/x"]) {
      const res = await fetch(`${ts.url}${path}`);
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({ error: { code: "not_found", message: "Not found" } });
    }
  });

  it("a plain GET /ws is told to upgrade; an upgrade elsewhere gets 404", async () => {
    expect((await fetch(`${ts.url}/ws`)).status).toBe(426);
    await expect(RawClient.open(ts.wsUrl.replace("/ws", "/other"))).rejects.toThrow(/404/);
  });
});

describe("handshake", () => {
  it("hello → ready with protocol_version, server, ts and the echoed request_id", async () => {
    const c = await RawClient.open(ts.wsUrl);
    c.send(hello({ request_id: "h1" }));
    const ready = await c.next("ready");
    expect(ready).toEqual({
      type: "ready",
      request_id: "h1",
      protocol_version: 1,
      server: "pheby",
      ts: "2026-09-02T18:00:00.000Z",
    });
    // Authenticated: requests work.
    expect((await c.ok({ type: "ping" }, "pong")).ts).toBe("2026-09-02T18:00:00.000Z");
    c.close();
  });

  it("a wrong secret gets unauthorized and close 4401 (also for a longer/shorter secret)", async () => {
    for (const secret of ["wrong", `${SECRET}x`, "", "x".repeat(LIMITS.shortTextChars)]) {
      const { error, close } = await failHello(undefined, hello({ secret, request_id: "h" }));
      expect(error.error.code).toBe("unauthorized");
      expect(error.request_id).toBe("h");
      expect(JSON.stringify(error)).not.toContain(SECRET);
      expect(close.code).toBe(CLOSE_CODES.unauthorized);
      now += 60_000; // keep clear of the lockout
    }
  });

  it("a wrong protocol_version gets version_mismatch and close 4426", async () => {
    const { error, close } = await failHello(undefined, hello({ protocol_version: 2 }));
    expect(error.error.code).toBe("version_mismatch");
    expect(close.code).toBe(CLOSE_CODES.versionMismatch);
  });

  it("any other first frame gets unauthorized and close 4401", async () => {
    for (const frame of [
      { type: "ping", request_id: "p" },
      { type: "conversation.list" },
      "not json",
      { type: "hello", secret: 42, protocol_version: 1 },
      { type: "nope" },
    ]) {
      const c = await RawClient.open(ts.wsUrl);
      c.send(frame);
      const error = await c.next("error");
      expect(error.error.code).toBe("unauthorized");
      expect((await c.closed).code).toBe(CLOSE_CODES.unauthorized);
      if (typeof frame === "object" && frame.type === "ping") expect(error.request_id).toBe("p");
    }
  });

  it("no hello within the auth timeout gets auth_timeout and close 4408", async () => {
    const c = await RawClient.open(ts.wsUrl);
    expect((await c.next("error")).error.code).toBe("auth_timeout");
    expect((await c.closed).code).toBe(CLOSE_CODES.authTimeout);
  });

  it("a second hello after ready is a bad_request and the connection stays", async () => {
    const c = await RawClient.connect(ts.wsUrl);
    const err = await c.request(hello(), "ready");
    expect(err.type === "error" && err.error.code).toBe("bad_request");
    await c.ok({ type: "ping" }, "pong");
    c.close();
  });
});

describe("lockout", () => {
  it("5 failed hellos in the window lock the address; others are unaffected; it expires", async () => {
    // Wrong secret and wrong version both count.
    for (let i = 0; i < 4; i++) await failHello();
    await failHello(undefined, hello({ protocol_version: 7 }));

    // Locked: even the right secret is refused with rate_limited / 4429, both naming the wait.
    const locked = await RawClient.open(ts.wsUrl);
    expect((await locked.next("error")).error).toEqual({
      code: "rate_limited",
      message: "Too many failed hellos from this address; retry after 60 s",
    });
    expect(await locked.closed).toEqual({
      code: CLOSE_CODES.lockedOut,
      reason: "locked out; retry after 60 s",
    });

    // Another source address (via XFF from the loopback proxy) is unaffected.
    const other = await RawClient.connect(ts.wsUrl, { headers: { "X-Forwarded-For": "203.0.113.9" } });
    other.close();

    now += 59_500; // the wait counts down, rounded up to whole seconds
    const later = await RawClient.open(ts.wsUrl);
    expect((await later.closed).reason).toBe("locked out; retry after 1 s");
    now += 500; // the configured lockout duration
    const again = await RawClient.connect(ts.wsUrl);
    again.close();
  });

  it("sockets opened before the lockout get no comparison either: exactly 5 per address", async () => {
    // The lockout is checked at every hello, not only when a socket opens: open 200 sockets first, then guess
    // on them. Only the first 5 hellos may be compared (`unauthorized`); every later one, the right secret
    // included, is refused.
    // Its own server: the shared one's 200 ms auth timeout would race 200 sequential hellos.
    await ts.cleanup();
    ts = await startServer({ clock, authTimeoutMs: 120_000, lockout: { durationMs: 60_000 } });
    const sockets = await Promise.all(Array.from({ length: 200 }, () => RawClient.open(ts.wsUrl)));
    const outcomes: string[] = [];
    for (const c of sockets.slice(0, 199)) {
      c.send(hello({ secret: "wrong" }));
      const err = await c.next("error");
      outcomes.push(err.error.code);
      expect((await c.closed).code).toBe(
        err.error.code === "rate_limited" ? CLOSE_CODES.lockedOut : CLOSE_CODES.unauthorized,
      );
    }
    expect(outcomes.filter((code) => code === "unauthorized")).toHaveLength(5);
    expect(outcomes.slice(5).every((code) => code === "rate_limited")).toBe(true);

    const last = sockets[199]!;
    last.send(hello({ request_id: "late" }));
    const refused = await last.next("error");
    expect(refused.error.code).toBe("rate_limited");
    expect(refused.request_id).toBe("late");
    expect((await last.closed).code).toBe(CLOSE_CODES.lockedOut);
    expect(last.frames.some((f) => f.type === "ready")).toBe(false);
  });

  it("failures spread beyond the window do not lock", async () => {
    for (let i = 0; i < 8; i++) {
      await failHello();
      now += 15_000; // at most 4 failures in any 60 s window
    }
    (await RawClient.connect(ts.wsUrl)).close();
  });

  it("behind the loopback proxy the rightmost X-Forwarded-For address is the source", async () => {
    // A client-supplied left part cannot dodge the lockout: Caddy appends the real address last.
    for (let i = 0; i < 5; i++) {
      await failHello({ "X-Forwarded-For": `10.0.0.${i}, 198.51.100.7` });
    }
    const locked = await RawClient.open(ts.wsUrl, { headers: { "X-Forwarded-For": "198.51.100.7" } });
    expect((await locked.next("error")).error.code).toBe("rate_limited");
    // The proxy's own address and other forwarded addresses still connect.
    (await RawClient.connect(ts.wsUrl)).close();
    (await RawClient.connect(ts.wsUrl, { headers: { "X-Forwarded-For": "198.51.100.8" } })).close();
  });

  it("an IPv6 source is locked out by its /64: fresh addresses in it do not buy fresh guesses", async () => {
    for (let i = 1; i <= 5; i++) await failHello({ "X-Forwarded-For": `2001:db8:0:1::${i}` });
    const sameSubnet = await RawClient.open(ts.wsUrl, {
      headers: { "X-Forwarded-For": "2001:db8:0:1:ffff::6" },
    });
    expect((await sameSubnet.next("error")).error.code).toBe("rate_limited");
    expect((await sameSubnet.closed).code).toBe(CLOSE_CODES.lockedOut);
    // The neighbouring /64 is someone else.
    (await RawClient.connect(ts.wsUrl, { headers: { "X-Forwarded-For": "2001:db8:0:2::1" } })).close();
  });
});

describe("heartbeat", () => {
  it("drops a peer that stops answering ws pings, keeps one that answers", async () => {
    const fast = await startServer({ heartbeatIntervalMs: 30 });
    try {
      const silent = await RawClient.open(fast.wsUrl, { autoPong: false });
      silent.send(hello());
      await silent.next("ready");
      const alive = await RawClient.connect(fast.wsUrl);
      const closed = await silent.closed;
      expect(closed.code).toBe(1006); // terminated without a close frame
      await alive.ok({ type: "ping" }, "pong");
      alive.close();
    } finally {
      await fast.cleanup();
    }
  });
});
