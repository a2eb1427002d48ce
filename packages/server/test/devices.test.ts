// The devices extension end to end: pairing over real sockets, device secrets on the
// socket and over HTTP, revocation of a device with a live socket and an upload in flight.
import { request } from "node:http";
import { pairDevice } from "@pheby/client";
import { CLOSE_CODES, checkFeatures, type ServerMessage } from "@pheby/protocol";
import { afterEach, describe, expect, it } from "vitest";
import { pairingUri } from "../src/devices/uri.js";
import { createConversation, RawClient, SECRET, startServer, type TestServer } from "./helpers.js";
import { http, storeFiles } from "./http.js";

const PUBLIC_URL = "wss://pheby.example.com/ws";
const servers: TestServer[] = [];
afterEach(async () => {
  for (const ts of servers.splice(0)) await ts.cleanup();
});

async function serve(options: Parameters<typeof startServer>[0] = {}): Promise<TestServer> {
  const ts = await startServer({ publicUrl: PUBLIC_URL, ...options });
  servers.push(ts);
  return ts;
}

/** A connection that said hello with `secret` (default: the master secret), asking for `features`. */
async function connect(
  ts: TestServer,
  { secret = SECRET, features }: { secret?: string; features?: string[] } = {},
): Promise<RawClient> {
  const client = await RawClient.open(ts.wsUrl);
  client.send({ type: "hello", secret, protocol_version: 1, ...(features ? { features } : {}) });
  await client.next("ready");
  return client;
}

/** A pairing hello with `code`; resolves with the first frame the server answers. */
async function pairingHello(ts: TestServer, code: string, extra: Record<string, unknown> = {}) {
  const phone = await RawClient.open(ts.wsUrl, extra.address ? { address: String(extra.address) } : {});
  const { address: _, ...fields } = extra;
  phone.send({ type: "hello", protocol_version: 1, features: ["devices"], pairing_code: code, ...fields });
  const first = await phone.nextAny(() => true);
  return { phone, first };
}

/** Pair a device through the owner connection; returns its ID and secret. */
async function pair(ts: TestServer, owner: RawClient, name = "Pixel 9") {
  const { code } = await owner.ok({ type: "pair.create" }, "pair.created");
  const { phone, first } = await pairingHello(ts, code, { device_name: name });
  if (first.type !== "ready" || !first.device) throw new Error(`pairing failed: ${JSON.stringify(first)}`);
  phone.close();
  return { id: first.device.device_id, secret: first.device.device_secret };
}

/** Every frame a connection received fits a connection with `features` (v1 byte for byte when empty). */
function expectOnly(frames: readonly ServerMessage[], features: string[]): void {
  for (const frame of frames) expect(checkFeatures(frame, features), JSON.stringify(frame)).toBeUndefined();
}

describe("devices: pairing", () => {
  it("pairs a phone end to end; its secret then works exactly where a v1 client uses the secret", async () => {
    const ts = await serve();
    const observer = await connect(ts); // a v1 client connected throughout
    const owner = await connect(ts, { features: ["devices"] });
    const created = await owner.ok({ type: "pair.create" }, "pair.created");
    expect(created.code).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(created.uri).toBe(pairingUri(PUBLIC_URL, created.code));

    // The phone: the client library's pairDevice, against this server, with the code of pair.created.
    const paired = await pairDevice(pairingUri(ts.wsUrl, created.code), { deviceName: "Pixel 9" });
    expect(paired.url).toBe(ts.wsUrl);
    expect(paired.deviceId).toMatch(/^[0-9a-f]{32}$/);
    expect(paired.deviceSecret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // A device whose ready was lost would show like this: never seen with its secret.
    const listed = await owner.ok({ type: "device.list" }, "device.snapshot");
    expect(listed.devices).toEqual([
      { device_id: paired.deviceId, name: "Pixel 9", created_at: expect.any(String), last_seen_at: null },
    ]);

    // A plain v1 client on the device secret: the same ready as ever, and it can do what v1 does.
    const phone = await RawClient.open(ts.wsUrl);
    phone.send({ type: "hello", secret: paired.deviceSecret, protocol_version: 1, request_id: "h" });
    const ready = await phone.next("ready");
    expect(Object.keys(ready).sort()).toEqual(["protocol_version", "request_id", "server", "ts", "type"]);
    const conv = await createConversation(phone, "from the phone");
    const q = `/attachments?conversation_id=${conv}&filename=a.txt`;
    const forms: Record<string, string>[] = [
      { authorization: `Bearer ${paired.deviceSecret}` },
      { authorization: `ApiKey ${paired.deviceSecret}` },
      { "x-pheby-secret": paired.deviceSecret },
    ];
    for (const headers of forms) {
      const up = await http(ts.url, "POST", q, { auth: false, headers, body: Buffer.from("from the phone") });
      expect(up.status, Object.keys(headers)[0]).toBe(201);
      const path = JSON.parse(up.body.toString()).attachment.download_path;
      const down = await http(ts.url, "GET", path, { auth: false, headers });
      expect(down.status).toBe(200);
      expect(down.body.toString()).toBe("from the phone");
    }
    const seen = await owner.ok({ type: "device.list" }, "device.snapshot");
    expect(seen.devices[0]!.last_seen_at).not.toBeNull();
    // The master secret is unaffected, and the v1 observer saw only v1 frames.
    await connect(ts);
    await observer.nextAny((m) => m.type === "conversation.updated");
    expectOnly(observer.frames, []);
    expectOnly(phone.frames, []);
  });

  it("takes the owner's name for the code over the phone's, and none when neither gave one", async () => {
    const ts = await serve();
    const owner = await connect(ts, { features: ["devices"] });
    const named = await owner.ok({ type: "pair.create", name: "Kitchen tablet" }, "pair.created");
    await pairingHello(ts, named.code, { device_name: "Pixel 9" });
    const bare = await owner.ok({ type: "pair.create" }, "pair.created");
    await pairingHello(ts, bare.code);
    const { devices } = await owner.ok({ type: "device.list" }, "device.snapshot");
    expect(devices.map((d) => d.name)).toEqual(["Kitchen tablet", null]);
  });

  it("a code works once: used again, or wrong, it is unauthorized/4401 and counts towards the lockout", async () => {
    const ts = await serve({ lockout: { maxFailures: 2 } });
    const owner = await connect(ts, { features: ["devices"] });
    const { code } = await owner.ok({ type: "pair.create" }, "pair.created");
    const first = await pairingHello(ts, code);
    expect(first.first.type).toBe("ready");
    const again = await pairingHello(ts, code, { request_id: "p2" });
    expect(again.first).toMatchObject({
      type: "error",
      request_id: "p2",
      error: { code: "unauthorized", message: "Invalid pairing code (wrong, used or expired)" },
    });
    expect((await again.phone.closed).code).toBe(CLOSE_CODES.unauthorized);
    // The second failure from this address locks it, even for a fresh, valid code.
    const wrong = await pairingHello(ts, "A".repeat(22));
    expect((await wrong.phone.closed).code).toBe(CLOSE_CODES.unauthorized);
    const fresh = await owner.ok({ type: "pair.create" }, "pair.created");
    const locked = await pairingHello(ts, fresh.code);
    expect(locked.first).toMatchObject({ type: "error", error: { code: "rate_limited" } });
    expect((await locked.phone.closed).code).toBe(CLOSE_CODES.lockedOut);
    expect((await owner.ok({ type: "device.list" }, "device.snapshot")).devices).toHaveLength(1);
  });

  it("a code expires 10 minutes after pair.create (injected clock)", async () => {
    let now = Date.parse("2026-09-02T18:00:00.000Z");
    const ts = await serve({ clock: { now: () => now } });
    const owner = await connect(ts, { features: ["devices"] });
    const early = await owner.ok({ type: "pair.create" }, "pair.created");
    const late = await owner.ok({ type: "pair.create" }, "pair.created");
    expect(early.expires_at).toBe("2026-09-02T18:10:00.000Z");
    now += 600_000 - 1;
    expect((await pairingHello(ts, early.code)).first.type).toBe("ready");
    now += 1;
    const expired = await pairingHello(ts, late.code);
    expect(expired.first).toMatchObject({ type: "error", error: { code: "unauthorized" } });
    expect((await expired.phone.closed).code).toBe(CLOSE_CODES.unauthorized);
  });

  it("10,000 guessed codes from one address: five are checked, the rest refused, memory stays bounded", async () => {
    const ts = await serve({ transport: "memory" });
    const owner = await connect(ts, { features: ["devices"] });
    const { code } = await owner.ok({ type: "pair.create" }, "pair.created");
    const heapBefore = process.memoryUsage().heapUsed;
    const answers = new Map<string, number>();
    for (let i = 0; i < 10_000; i++) {
      const guess = Buffer.from(`guess number ${i}`.padEnd(16, ".")).subarray(0, 16).toString("base64url");
      const { phone, first } = await pairingHello(ts, guess, { address: "198.51.100.7" });
      const key = first.type === "error" ? first.error.code : first.type;
      answers.set(key, (answers.get(key) ?? 0) + 1);
      await phone.closed;
    }
    expect(Object.fromEntries(answers)).toEqual({ unauthorized: 5, rate_limited: 9_995 });
    expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(64 * 1024 * 1024);
    // The owner's code is untouched by the guesses and still pairs, from another address.
    const real = await pairingHello(ts, code, { address: "203.0.113.9" });
    expect(real.first.type).toBe("ready");
  }, 120_000);
});

describe("devices: who may do what", () => {
  it("only the owner may pair, list or revoke; without the feature the requests do not exist", async () => {
    const ts = await serve();
    const owner = await connect(ts, { features: ["devices"] });
    const device = await pair(ts, owner);
    const phone = await connect(ts, { secret: device.secret, features: ["devices"] });
    for (const [frame, what] of [
      [{ type: "pair.create" }, "pair devices"],
      [{ type: "device.list" }, "list devices"],
      [{ type: "device.revoke", device_id: device.id }, "revoke devices"],
    ] as const) {
      expect(await phone.request(frame, "pair.created")).toMatchObject({
        type: "error",
        error: { code: "bad_request", message: `only the owner (the master secret) may ${what}` },
      });
    }
    const v1 = await connect(ts);
    for (const frame of [
      { type: "pair.create" },
      { type: "device.list" },
      { type: "device.revoke", device_id: device.id },
    ])
      expect(await v1.request(frame, "pair.created")).toMatchObject({
        type: "error",
        error: { code: "unknown_type", message: "unknown message type" },
      });
    expect(
      await owner.request({ type: "device.revoke", device_id: "0".repeat(32) }, "device.revoked"),
    ).toMatchObject({ type: "error", error: { code: "not_found" } });
  });

  it("without PHEBY_PUBLIC_URL pair.create is not_implemented, naming the setting; devices still work", async () => {
    const ts = await serve({ publicUrl: undefined });
    const owner = await connect(ts, { features: ["devices"] });
    expect(await owner.request({ type: "pair.create" }, "pair.created")).toMatchObject({
      type: "error",
      error: { code: "not_implemented", message: expect.stringContaining("PHEBY_PUBLIC_URL") },
    });
    expect((await owner.ok({ type: "device.list" }, "device.snapshot")).devices).toEqual([]);
  });

  it("a pairing hello that does not ask for devices fails like a v1 hello without a secret", async () => {
    const ts = await serve();
    const owner = await connect(ts, { features: ["devices"] });
    const { code } = await owner.ok({ type: "pair.create" }, "pair.created");
    const phone = await RawClient.open(ts.wsUrl);
    phone.send({ type: "hello", protocol_version: 1, pairing_code: code });
    expect(await phone.next("error")).toMatchObject({ error: { code: "unauthorized" } });
    expect((await phone.closed).code).toBe(CLOSE_CODES.unauthorized);
    // The code was not spent.
    expect((await pairingHello(ts, code)).first.type).toBe("ready");
  });
});

describe("devices: revoking", () => {
  it("closes the device's sockets with 4401, cuts its upload (no partial file), refuses its secret; nothing else changes", async () => {
    const ts = await serve();
    const observer = await connect(ts); // v1, master secret
    const owner = await connect(ts, { features: ["devices"] });
    const lost = await pair(ts, owner, "lost phone");
    const other = await pair(ts, owner, "tablet");
    const lostV1 = await connect(ts, { secret: lost.secret });
    const lostExt = await connect(ts, { secret: lost.secret, features: ["devices"] });
    const tablet = await connect(ts, { secret: other.secret, features: ["devices"] });
    const conv = await createConversation(owner);

    // An upload of 1 MiB that has sent only its first 64 KiB.
    const { hostname, port } = new URL(ts.url);
    const upload = request({
      host: hostname,
      port,
      method: "POST",
      path: `/attachments?conversation_id=${conv}&filename=big.bin`,
      headers: { authorization: `Bearer ${lost.secret}`, "content-length": 1024 * 1024 },
    });
    const uploadEnded = new Promise<string>((resolve) => {
      upload.on("error", (err) => resolve(`error: ${err.message}`));
      upload.on("response", (res) => resolve(`status ${res.statusCode}`));
    });
    upload.write(Buffer.alloc(64 * 1024, 1));
    while (storeFiles(ts.dataDir).tmp.length === 0) await new Promise((r) => setTimeout(r, 10));

    owner.send({ type: "device.revoke", device_id: lost.id, request_id: "rv" });
    expect(await owner.next("device.revoked")).toMatchObject({ device_id: lost.id, request_id: "rv" });
    for (const conn of [lostV1, lostExt]) {
      expect(await conn.next("error")).toMatchObject({
        error: { code: "unauthorized", message: "device revoked" },
      });
      expect((await conn.closed).code).toBe(CLOSE_CODES.unauthorized);
    }
    // The other devices connection hears of it, without the owner's request_id; v1 hears nothing.
    const heard = await tablet.next("device.revoked");
    expect(heard).toEqual({ type: "device.revoked", device_id: lost.id });
    expect(await uploadEnded).toMatch(/^error: /);
    while (storeFiles(ts.dataDir).tmp.length > 0) await new Promise((r) => setTimeout(r, 10));
    expect(storeFiles(ts.dataDir).blobs).toEqual([]);

    // Refused from now on, on the socket and over HTTP; the other device and the master secret are not.
    const again = await RawClient.open(ts.wsUrl);
    again.send({ type: "hello", secret: lost.secret, protocol_version: 1 });
    expect(await again.next("error")).toMatchObject({ error: { code: "unauthorized" } });
    expect((await again.closed).code).toBe(CLOSE_CODES.unauthorized);
    const refused = await http(ts.url, "GET", "/attachments/0123456789abcdef0123456789abcdef", {
      auth: false,
      headers: { authorization: `Bearer ${lost.secret}` },
    });
    expect(refused.status).toBe(401);
    await tablet.ok({ type: "ping" }, "pong");
    await connect(ts, { secret: other.secret });
    await connect(ts);
    expect((await owner.ok({ type: "device.list" }, "device.snapshot")).devices.map((d) => d.name)).toEqual([
      "tablet",
    ]);
    expectOnly(observer.frames, []);
    expect(observer.frames.some((m) => m.type.startsWith("device."))).toBe(false);
  });
});
