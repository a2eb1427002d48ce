// A web page in the owner's browser and a local user of the host must not lock the owner out or
// guess for free: the WebSocket's Origin check, one credential per HTTP request, and whose
// X-Forwarded-For is believed.
import { describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import {
  createConversation,
  RawClient,
  SECRET,
  send,
  startServer,
  type TestServer,
  useTempDirs,
} from "./helpers.js";
import { http, upload } from "./http.js";

/** The outcome of one WebSocket handshake: 101 once open, else the HTTP status and body it got. */
function handshake(
  wsUrl: string,
  headers: Record<string, string>,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(wsUrl, { headers });
    ws.once("open", () => {
      ws.close();
      resolve({ status: 101, body: "" });
    });
    ws.once("unexpected-response", (_req, res) => {
      let body = "";
      res.on("data", (chunk: Buffer) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    ws.once("error", (err) => {
      if (!/Unexpected server response/.test(err.message)) reject(err);
    });
  });
}

const hostOf = (ts: TestServer) => new URL(ts.url).host;
const dir = useTempDirs();

describe("WebSocket Origin", () => {
  it("with PHEBY_PUBLIC_URL: its origin, the CORS list and no Origin connect; any other origin gets 403", async () => {
    const ts = await startServer({
      publicUrl: "wss://pheby.example.com/ws",
      corsOrigins: ["https://console.example.com"],
    });
    try {
      for (const origin of ["https://pheby.example.com", "https://console.example.com"])
        expect((await handshake(ts.wsUrl, { Origin: origin })).status).toBe(101);
      expect((await handshake(ts.wsUrl, {})).status).toBe(101);
      const foreign = [
        "https://evil.example",
        "http://pheby.example.com", // the public URL is wss: its page is https
        "https://pheby.example.com:8443",
        `http://${hostOf(ts)}`, // the Host's origin counts only without a public URL
        "null",
      ];
      for (const origin of foreign) {
        const refused = await handshake(ts.wsUrl, { Origin: origin });
        expect(refused.status).toBe(403);
        expect(JSON.parse(refused.body)).toEqual({
          error: { code: "unauthorized", message: "This origin may not connect" },
        });
      }
      // A native client (no Origin) still completes the protocol's handshake.
      (await RawClient.connect(ts.wsUrl)).close();
    } finally {
      await ts.cleanup();
    }
  });

  it("without PHEBY_PUBLIC_URL: the origin of the request's Host (the console it serves) connects, others 403", async () => {
    const ts = await startServer();
    try {
      const host = hostOf(ts);
      const port = Number(new URL(ts.url).port);
      for (const origin of [`http://${host}`, `https://${host}`])
        expect((await handshake(ts.wsUrl, { Origin: origin })).status).toBe(101);
      for (const origin of [
        `http://127.0.0.1:${port + 1}`,
        `http://localhost:${port}`,
        "https://evil.example",
      ])
        expect((await handshake(ts.wsUrl, { Origin: origin })).status).toBe(403);
      // A page that names its own host reaches only itself: Host and Origin must agree.
      expect(
        (await handshake(ts.wsUrl, { Origin: "http://evil.example", Host: "evil.example" })).status,
      ).toBe(101);
      expect((await handshake(ts.wsUrl, { Origin: "http://evil.example", Host: host })).status).toBe(403);
    } finally {
      await ts.cleanup();
    }
  });

  it("a foreign page's refused handshakes are no lockout failures: the owner's address stays open", async () => {
    const ts = await startServer({ lockout: { maxFailures: 2 } });
    try {
      // A page trying again and again: each attempt is refused before any hello can be sent.
      for (let i = 0; i < 20; i++)
        expect((await handshake(ts.wsUrl, { Origin: "https://evil.example" })).status).toBe(403);
      (await RawClient.connect(ts.wsUrl)).close();
      const answer = await http(ts.url, "GET", "/attachments/00000000000000000000000000000000");
      expect(answer.status).toBe(404);
      // The lockout itself still works: two wrong hellos lock the address.
      for (let i = 0; i < 2; i++) {
        const wrong = await RawClient.open(ts.wsUrl);
        wrong.send({ type: "hello", secret: "wrong-secret", protocol_version: 1 });
        expect((await wrong.next("error")).error.code).toBe("unauthorized");
      }
      const locked = await RawClient.open(ts.wsUrl);
      expect((await locked.next("error")).error.code).toBe("rate_limited");
    } finally {
      await ts.cleanup();
    }
  });
});

describe("one credential per HTTP request", () => {
  const both = (authorization: string, secret: string) => ({ authorization, "x-pheby-secret": secret });

  it("Authorization and X-Pheby-Secret together: 401 whatever they hold, one failure each", async () => {
    const ts = await startServer({ lockout: { maxFailures: 3 } });
    try {
      const c = await RawClient.connect(ts.wsUrl);
      const conv = await createConversation(c);
      const { json } = await upload(ts.url, conv, "a.txt", Buffer.from("a"));
      const path = json.attachment.download_path as string;
      await send(c, conv, "/sim approval");
      const asked = await c.next("approval.request");
      const answer = (headers: Record<string, string>) =>
        http(ts.url, "POST", `/approvals/${asked.approval_id}`, {
          auth: false,
          headers: { ...headers, "content-type": "application/json" },
          body: Buffer.from(JSON.stringify({ choice: "once" })),
        });

      // Not compared: even the right secret twice, or the right one beside a wrong one, is refused.
      const download = await http(ts.url, "GET", path, {
        auth: false,
        headers: both(`Bearer ${SECRET}`, SECRET),
      });
      expect(download.status).toBe(401);
      expect(JSON.parse(download.body.toString())).toEqual({
        error: { code: "unauthorized", message: "Present one credential: Authorization or X-Pheby-Secret" },
      });
      const approve = await answer(both(`ApiKey ${SECRET}`, "wrong-guess"));
      expect(approve.status).toBe(401);
      // Two failures so far, not four: a request without credentials is still answered 401, not 429.
      expect((await http(ts.url, "GET", path, { auth: false })).status).toBe(401);
      const clarify = await http(ts.url, "POST", "/clarify/x", {
        auth: false,
        headers: both("Bearer wrong-1", "wrong-2"),
      });
      expect(clarify.status).toBe(401);
      // The third failure locked the address: even one right credential is refused now.
      expect((await http(ts.url, "GET", path)).status).toBe(429);
      expect((await answer({ "x-pheby-secret": SECRET })).status).toBe(429);
      // And the approval was never answered.
      const open = await c.ok({ type: "conversation.open", conversation_id: conv }, "conversation.history");
      expect(open.approvals.map((a) => a.approval_id)).toEqual([asked.approval_id]);
      c.close();
    } finally {
      await ts.cleanup();
    }
  });

  it("one credential in either header still works", async () => {
    const ts = await startServer();
    try {
      const c = await RawClient.connect(ts.wsUrl);
      const conv = await createConversation(c);
      const { json } = await upload(ts.url, conv, "a.txt", Buffer.from("a"));
      const path = json.attachment.download_path as string;
      for (const headers of [{ authorization: `Bearer ${SECRET}` }, { "x-pheby-secret": SECRET }] as Record<
        string,
        string
      >[])
        expect((await http(ts.url, "GET", path, { auth: false, headers })).status).toBe(200);
      c.close();
    } finally {
      await ts.cleanup();
    }
  });
});

describe("trusted proxy", () => {
  /**
   * One hello from local address `from` (a 127/8 address: all of them are loopback) with
   * `X-Forwarded-For: forwarded`: "ready", or the error code it got.
   */
  function helloFrom(ts: TestServer, from: string, forwarded?: string, secret = SECRET): Promise<string> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(ts.wsUrl, {
        localAddress: from,
        headers: forwarded === undefined ? {} : { "X-Forwarded-For": forwarded },
      });
      ws.once("error", reject);
      ws.once("open", () => ws.send(JSON.stringify({ type: "hello", secret, protocol_version: 1 })));
      ws.once("message", (data) => {
        const frame = JSON.parse(String(data)) as { type: string; error?: { code: string } };
        ws.close();
        resolve(frame.type === "ready" ? "ready" : (frame.error?.code ?? frame.type));
      });
    });
  }
  const WRONG = "wrong-secret-guess";

  it("none: X-Forwarded-For from loopback is ignored, the lockout applies to the peer address", async () => {
    const ts = await startServer({ dataDir: dir(), trustedProxy: "none", lockout: { maxFailures: 2 } });
    try {
      // A local user naming a fresh address for every guess: all of them count against its own.
      expect(await helloFrom(ts, "127.0.0.1", "198.51.100.1", WRONG)).toBe("unauthorized");
      expect(await helloFrom(ts, "127.0.0.1", "198.51.100.2", WRONG)).toBe("unauthorized");
      expect(await helloFrom(ts, "127.0.0.1", "198.51.100.3")).toBe("rate_limited");
      const overHttp = await http(ts.url, "GET", "/attachments/x", {
        headers: { "x-forwarded-for": "198.51.100.4" },
      });
      expect(overHttp.status).toBe(429);
      // Nor could the header lock anyone else out: another peer address still connects.
      expect(await helloFrom(ts, "127.0.0.2", "198.51.100.1")).toBe("ready");
    } finally {
      await ts.close();
    }
  });

  it("loopback (the default): any local peer's X-Forwarded-For is believed", async () => {
    const ts = await startServer({ dataDir: dir(), lockout: { maxFailures: 1 } });
    try {
      expect(await helloFrom(ts, "127.0.0.1", "198.51.100.1", WRONG)).toBe("unauthorized");
      // The local guesser is not locked: a fresh header is a fresh address.
      expect(await helloFrom(ts, "127.0.0.1", "198.51.100.2")).toBe("ready");
      expect(await helloFrom(ts, "127.0.0.2", "198.51.100.1")).toBe("rate_limited");
    } finally {
      await ts.close();
    }
  });

  it("a list: only the listed proxy's X-Forwarded-For counts", async () => {
    const ts = await startServer({
      dataDir: dir(),
      trustedProxy: ["127.0.0.2"],
      lockout: { maxFailures: 1 },
    });
    try {
      expect(await helloFrom(ts, "127.0.0.2", "198.51.100.7", WRONG)).toBe("unauthorized");
      // 198.51.100.7 is locked, through the proxy; the proxy's other clients and the proxy are not.
      expect(await helloFrom(ts, "127.0.0.2", "198.51.100.7")).toBe("rate_limited");
      expect(await helloFrom(ts, "127.0.0.2", "198.51.100.8")).toBe("ready");
      expect(await helloFrom(ts, "127.0.0.2")).toBe("ready");
      // From 127.0.0.1, not on the list, the header is ignored: the guess counts against the peer.
      expect(await helloFrom(ts, "127.0.0.1", "198.51.100.9", WRONG)).toBe("unauthorized");
      expect(await helloFrom(ts, "127.0.0.1", "198.51.100.10")).toBe("rate_limited");
      expect(await helloFrom(ts, "127.0.0.2", "198.51.100.9")).toBe("ready");
    } finally {
      await ts.close();
    }
  });

  it("refuses a setting that is neither loopback, none nor IP addresses", async () => {
    await expect(startServer({ dataDir: dir(), trustedProxy: ["caddy.local"] })).rejects.toThrow(
      /trustedProxy must be "loopback", "none" or a list of IP addresses/,
    );
  });
});
