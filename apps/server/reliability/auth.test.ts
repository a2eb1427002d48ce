// Brute force and authentication against the built server. Source addresses are
// distinct loopback addresses (127.0.x.y, bound as the client socket's localAddress), so each
// scenario has its own lockout bucket.
import { request as httpRequest } from "node:http";
import { CLOSE_CODES } from "@pheby/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type App,
  createConversation,
  fdCount,
  Peer,
  rssMiB,
  SECRET,
  startApp,
  upload,
  waitFor,
} from "./harness.js";

let app: App;
let conversation: string;
let attachmentId: string;

beforeAll(async () => {
  app = await startApp();
  const peer = await Peer.ready(app.wsUrl);
  conversation = await createConversation(peer);
  const up = await upload(app.url, conversation, "a.txt", "attachment body");
  attachmentId = up.body.attachment!.attachment_id;
  peer.close();
});
afterAll(async () => {
  await app?.kill();
});

/** One wrong hello on a new socket; resolves with the error code and the close code. */
async function wrongHello(localAddress: string): Promise<{ error?: string; close: number }> {
  const peer = await Peer.open(app.wsUrl, { localAddress });
  if (peer.closeState?.code === undefined)
    peer.send({ type: "hello", secret: "wrong-secret", protocol_version: 1 });
  const { code } = await peer.closed;
  const err = peer.frames.find((m) => m.type === "error");
  return { ...(err?.type === "error" ? { error: err.error.code } : {}), close: code };
}

/** HTTP request with a bound source address and raw headers (fetch cannot bind an address). */
function http(
  method: "GET" | "POST",
  path: string,
  headers: Record<string, string>,
  localAddress: string,
  body?: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${app.url}${path}`, { method, headers, localAddress, agent: false }, (res) => {
      let body = "";
      res.on("data", (d: Buffer) => {
        body += d.toString();
      });
      res.on("end", () => resolve({ status: res.statusCode!, body }));
    });
    req.on("error", reject);
    req.end(body);
  });
}
const get = (path: string, headers: Record<string, string>, localAddress: string) =>
  http("GET", path, headers, localAddress);

describe("brute force and auth", () => {
  it("1,000 wrong hellos from one address: 5 are checked, 995 refused with rate_limited/4429; the right secret is refused too; other addresses are unaffected", async () => {
    const results: { error?: string; close: number }[] = [];
    for (let i = 0; i < 1000; i++) results.push(await wrongHello("127.0.5.1"));
    const checked = results.filter((r) => r.error === "unauthorized" && r.close === CLOSE_CODES.unauthorized);
    const refused = results.filter((r) => r.error === "rate_limited" && r.close === CLOSE_CODES.lockedOut);
    expect(checked.length).toBe(5);
    expect(refused.length).toBe(995);
    // Locked out means locked out: the right secret from there is refused as well.
    const locked = await Peer.open(app.wsUrl, { localAddress: "127.0.5.1" });
    expect((await locked.closed).code).toBe(CLOSE_CODES.lockedOut);
    // Another address is unaffected, and so is HTTP from it.
    const other = await Peer.ready(app.wsUrl, { localAddress: "127.0.5.2" });
    expect((await other.request({ type: "ping" })).type).toBe("pong");
    other.close();
    expect(
      (await get(`/attachments/${attachmentId}`, { authorization: `Bearer ${SECRET}` }, "127.0.5.2")).status,
    ).toBe(200);
    expect(
      (await get(`/attachments/${attachmentId}`, { authorization: `Bearer ${SECRET}` }, "127.0.5.1")).status,
    ).toBe(429);
  });

  // The lockout is checked at every hello, not only when a socket opens, so
  // sockets opened before it cannot each get a guess.
  it("1,000 sockets opened first, then 1,000 wrong hellos: still only 5 are checked, the rest get rate_limited", async () => {
    const peers = await Promise.all(
      Array.from({ length: 1000 }, () => Peer.open(app.wsUrl, { localAddress: "127.0.5.3" })),
    );
    for (const p of peers) p.send({ type: "hello", secret: "wrong-secret", protocol_version: 1 });
    await Promise.all(peers.map((p) => p.closed));
    const checked = peers.filter((p) =>
      p.frames.some((m) => m.type === "error" && m.error.code === "unauthorized"),
    );
    expect(checked.length).toBe(5);
    const refused = peers.filter((p) =>
      p.frames.some((m) => m.type === "error" && m.error.code === "rate_limited"),
    );
    expect(refused.length).toBe(995);
  });

  it("lockout state stays bounded under 10,500 source addresses sent as X-Forwarded-For from loopback", async () => {
    const rssBefore = rssMiB(app.pid);
    const addresses = 10_500;
    let next = 0;
    let statuses: Record<number, number> = {};
    // 5 wrong attempts per forwarded address lock each one; 50 requests in flight.
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        for (let i = next++; i < addresses * 5; i = next++) {
          const a = Math.floor(i / 5);
          const res = await fetch(`${app.url}/attachments/${attachmentId}`, {
            headers: {
              authorization: "Bearer wrong",
              "x-forwarded-for": `10.${a >> 16}.${(a >> 8) & 255}.${a & 255}`,
            },
          });
          await res.arrayBuffer();
          statuses[res.status] = (statuses[res.status] ?? 0) + 1;
        }
      }),
    );
    const rssAfter = rssMiB(app.pid);
    console.log(
      `[auth] ${addresses} forwarded addresses x 5 wrong attempts: statuses ${JSON.stringify(statuses)}; RSS ${rssBefore.toFixed(0)} -> ${rssAfter.toFixed(0)} MiB`,
    );
    // Every attempt was refused; memory stayed within a stated bound (expired locks are dropped past 10,000).
    expect((statuses[401] ?? 0) + (statuses[429] ?? 0)).toBe(addresses * 5);
    expect(rssAfter - rssBefore).toBeLessThan(64);
    statuses = {};
    // The most recent forwarded address is locked; the server still serves the right secret elsewhere.
    const last = addresses - 1;
    const res = await fetch(`${app.url}/attachments/${attachmentId}`, {
      headers: {
        authorization: `Bearer ${SECRET}`,
        "x-forwarded-for": `10.${last >> 16}.${(last >> 8) & 255}.${last & 255}`,
      },
    });
    expect(res.status).toBe(429);
    expect(
      (await get(`/attachments/${attachmentId}`, { authorization: `Bearer ${SECRET}` }, "127.0.5.4")).status,
    ).toBe(200);
  });

  it("500 connections that never send hello all get auth_timeout/4408, and a client keeps working meanwhile", async () => {
    const fdsBefore = fdCount(app.pid);
    const silent = await Promise.all(
      Array.from({ length: 500 }, () => Peer.open(app.wsUrl, { localAddress: "127.0.5.5" })),
    );
    const probe = await Peer.ready(app.wsUrl, { localAddress: "127.0.5.6" });
    expect((await probe.request({ type: "conversation.list" })).type).toBe("conversation.snapshot");
    const t0 = performance.now();
    const closes = await Promise.all(silent.map((p) => p.closed));
    const elapsed = performance.now() - t0;
    expect(closes.every((c) => c.code === CLOSE_CODES.authTimeout)).toBe(true);
    expect(
      silent.every(
        (p) =>
          p.frames.length === 1 && p.frames[0]?.type === "error" && p.frames[0].error.code === "auth_timeout",
      ),
    ).toBe(true);
    expect((await probe.request({ type: "ping" })).type).toBe("pong");
    probe.close();
    // Their sockets are released (a few fds of slack for the probe and the HTTP keep-alive pool).
    await waitFor(() => fdCount(app.pid) <= fdsBefore + 5, 10_000, "fds to return to baseline");
    console.log(
      `[auth] 500 silent connections closed after ${(elapsed / 1000).toFixed(1)} s more; fds ${fdsBefore} -> ${fdCount(app.pid)}`,
    );
    // Timeouts are not failed hellos: the address is not locked out.
    const again = await Peer.ready(app.wsUrl, { localAddress: "127.0.5.5" });
    again.close();
  });

  it("the attachment routes reject every auth variant that is not exactly right", async () => {
    const wrong: [string, Record<string, string>, string?][] = [
      ["no credentials", {}],
      ["Bearer without a secret", { authorization: "Bearer" }],
      ["Bearer and spaces", { authorization: "Bearer    " }],
      ["Bearer wrong", { authorization: "Bearer wrong" }],
      ["Bearer secret+x", { authorization: `Bearer ${SECRET}x` }],
      ["Bearer secret minus one char", { authorization: `Bearer ${SECRET.slice(0, -1)}` }],
      ["Bearer secret upper-cased", { authorization: `Bearer ${SECRET.toUpperCase()}` }],
      ["Bearer quoted secret", { authorization: `Bearer "${SECRET}"` }],
      ["Bearer secret and more", { authorization: `Bearer ${SECRET} ${SECRET}` }],
      ["Bearer, tab, secret", { authorization: `Bearer\t${SECRET}` }],
      ["no scheme", { authorization: SECRET }],
      ["Basic user:secret", { authorization: `Basic ${Buffer.from(`pheby:${SECRET}`).toString("base64")}` }],
      ["Basic secret", { authorization: `Basic ${SECRET}` }],
      ["Token secret", { authorization: `Token ${SECRET}` }],
      ["Bearer base64(secret)", { authorization: `Bearer ${Buffer.from(SECRET).toString("base64")}` }],
      ["X-Pheby-Secret wrong", { "x-pheby-secret": `${SECRET}x` }],
      ["X-Pheby-Secret with a scheme", { "x-pheby-secret": `Bearer ${SECRET}` }],
      ["Proxy-Authorization", { "proxy-authorization": `Bearer ${SECRET}` }],
      ["Cookie", { cookie: `secret=${SECRET}; pheby_secret=${SECRET}` }],
      ["X-Api-Key", { "x-api-key": SECRET }],
      ["secret in the query", {}, `secret=${SECRET}`],
      ["token in the query", {}, `token=${SECRET}&access_token=${SECRET}`],
    ];
    let i = 0;
    for (const [label, headers, query] of wrong) {
      i++;
      const addr = `127.0.6.${i}`;
      const q = query ? `?${query}` : "";
      const got = await get(`/attachments/${attachmentId}${q}`, headers, addr);
      expect({ label, status: got.status }).toEqual({ label, status: 401 });
      expect(JSON.parse(got.body)).toMatchObject({ error: { code: "unauthorized" } });
      expect(got.body).not.toContain("attachment body");
      const path = `/attachments?conversation_id=${conversation}&filename=x.txt${query ? `&${query}` : ""}`;
      const up = await http("POST", path, headers, `127.0.7.${i}`, "should not land");
      expect({ label, status: up.status }).toEqual({ label, status: 401 });
    }
    // The right forms work (scheme case-insensitive, as HTTP auth schemes are).
    const right: [string, Record<string, string>][] = [
      ["Bearer", { authorization: `Bearer ${SECRET}` }],
      ["bearer", { authorization: `bearer ${SECRET}` }],
      ["ApiKey", { authorization: `ApiKey ${SECRET}` }],
      ["X-Pheby-Secret", { "x-pheby-secret": SECRET }],
    ];
    for (const [label, headers] of right) {
      const got = await get(`/attachments/${attachmentId}`, headers, "127.0.6.250");
      expect({ label, status: got.status, body: got.body }).toEqual({
        label,
        status: 200,
        body: "attachment body",
      });
    }
    // Wrong attempts count towards the lockout: after five, even the right secret gets 429.
    for (let k = 0; k < 5; k++)
      await get(`/attachments/${attachmentId}`, { authorization: "Bearer nope" }, "127.0.6.251");
    expect(
      (await get(`/attachments/${attachmentId}`, { authorization: `Bearer ${SECRET}` }, "127.0.6.251"))
        .status,
    ).toBe(429);
  });
});
