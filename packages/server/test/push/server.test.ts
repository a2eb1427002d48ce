// The push extension end to end: a real server (ws, port 0), a real receiver that decrypts, the
// simulator agent, the HTTP answer routes.
import { readFileSync } from "node:fs";
import { type AddressInfo, createServer } from "node:net";
import { join } from "node:path";
import { decodeServerFrame, type ServerMessage } from "@pheby/protocol";
import { afterEach, describe, expect, it } from "vitest";
import {
  type PushReceiver,
  type ReceiverEndpoint,
  startReceiver,
} from "../../../conformance/src/push-receiver.js";
import { openDeviceAdmin } from "../../src/devices/admin.js";
import {
  captureLogs,
  createConversation,
  helloWith,
  pairDevice,
  RawClient,
  SECRET,
  send,
  startServer,
  type TestServer,
  type TestServerOptions,
} from "../helpers.js";
import { http } from "../http.js";
import { FAST_RETRY } from "./rig.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Setup {
  ts: TestServer;
  receiver: PushReceiver;
  logs: () => string;
}

async function setup(options: TestServerOptions = {}): Promise<Setup> {
  const receiver = await startReceiver();
  const { logger, text } = captureLogs("debug");
  const ts = await startServer({
    logger,
    push: { allowPrivate: true, retry: FAST_RETRY, timeoutMs: 60_000 },
    ...options,
  });
  cleanups.push(
    () => expect(receiver.errors).toEqual([]),
    () => receiver.close(),
    () => ts.cleanup(),
  );
  return { ts, receiver, logs: text };
}

/** A connection that enabled `features` (default: push). */
async function connect(ts: TestServer, features: string[] | null = ["push"]) {
  const client = await RawClient.open(ts.wsUrl);
  client.send({ type: "hello", secret: SECRET, protocol_version: 1, ...(features ? { features } : {}) });
  const ready = await client.next("ready");
  cleanups.push(() => client.close());
  return { client, ready };
}

async function subscribe(client: RawClient, endpoint: ReceiverEndpoint, extra: Record<string, unknown> = {}) {
  const reply = await client.ok(
    {
      type: "push.subscribe",
      endpoint: endpoint.endpoint,
      keys: endpoint.keys,
      device_name: "Pixel 9",
      ...extra,
    },
    "push.subscribed",
  );
  return reply.subscription_id;
}

describe("negotiation: nothing new without the push feature", () => {
  it("ready.push carries the stored VAPID key only for push connections; others get unknown_type", async () => {
    const { ts } = await setup();
    const { ready } = await connect(ts);
    const stored = JSON.parse(readFileSync(join(ts.dataDir, "vapid.json"), "utf8")) as { publicKey: string };
    expect(ready).toMatchObject({ features: ["push"], push: { vapid_public_key: stored.publicKey } });

    const v1 = await connect(ts, null);
    expect(v1.ready).not.toHaveProperty("push");
    expect(v1.ready).not.toHaveProperty("features");
    const append = await connect(ts, ["delta.append"]);
    expect(append.ready).toMatchObject({ features: ["delta.append"] });
    expect(append.ready).not.toHaveProperty("push");
    for (const { client } of [v1, append]) {
      for (const frame of [
        { type: "push.list" },
        { type: "push.subscribe", endpoint: "https://push.example.net/x", keys: { p256dh: "x", auth: "y" } },
        { type: "presence", state: "active" },
      ]) {
        const reply = await client.request(frame, "push.subscriptions");
        expect(reply).toMatchObject({
          type: "error",
          error: { code: "unknown_type", message: "unknown message type" },
        });
      }
    }
  });

  it("a v1 connection's frames stay v1, byte for byte, while pushes go out", async () => {
    const { ts, receiver } = await setup();
    const { client: pushy } = await connect(ts);
    const phone = receiver.endpoint("phone");
    await subscribe(pushy, phone);
    const { client: v1 } = await connect(ts, null);
    const conv = await createConversation(v1, "Project X");
    const runId = await send(v1, conv, "/sim approval");
    const asked = await v1.next("approval.request");
    await phone.next(); // the approval push went out
    v1.send({ type: "approval.respond", approval_id: asked.approval_id, choice: "once" });
    await v1.run(runId);
    await phone.next(3); // resolved, run_finished
    for (const raw of v1.raw) {
      const decoded = decodeServerFrame(raw, { features: [] });
      expect(decoded.ok, raw.slice(0, 120)).toBe(true);
    }
    expect(v1.frames.some((m) => m.type.startsWith("push."))).toBe(false);
  });
});

describe("each kind arrives and decrypts", () => {
  it("approval (answered over HTTP), resolved, run_finished, clarify, message and test", async () => {
    const { ts, receiver, logs } = await setup();
    const { client } = await connect(ts);
    const phone = receiver.endpoint("phone-secret-path");
    const subscriptionId = await subscribe(client, phone);
    const conv = await createConversation(client, "Project X");

    const runId = await send(client, conv, "/sim approval");
    const asked = await client.next("approval.request");
    const approval = await phone.next();
    expect(approval.payload).toMatchObject({
      kind: "approval",
      conversation_id: conv,
      approval_id: asked.approval_id,
      conversation_name: "Project X",
      title: "Project X",
      tool: "shell",
      command_preview: asked.command,
      choices: asked.choices,
    });
    expect(approval.headers).toMatchObject({ urgency: "high", ttl: "60" });
    const answered = await http(ts.url, "POST", `/approvals/${asked.approval_id}`, {
      headers: { "content-type": "application/json" },
      body: Buffer.from(JSON.stringify({ choice: "once" })),
    });
    expect(answered.status).toBe(200);
    expect(JSON.parse(answered.body.toString())).toEqual({
      approval_id: asked.approval_id,
      conversation_id: conv,
      choice: "once",
      accepted: true,
    });
    const resolvedFrame = await client.next("approval.resolved");
    expect(resolvedFrame).toEqual({
      type: "approval.resolved",
      approval_id: asked.approval_id,
      choice: "once",
      accepted: true,
    });
    const resolved = await phone.next();
    expect(resolved.payload).toMatchObject({
      kind: "resolved",
      approval_id: asked.approval_id,
      tag: approval.payload.tag,
    });
    await client.run(runId);
    const finished = await phone.next();
    expect(finished.payload).toMatchObject({ kind: "run_finished", run_id: runId, status: "completed" });
    expect(finished.payload.body).toMatch(/^Approved \(once\)/);

    await send(client, conv, "/sim clarify");
    const question = await client.next("clarify.request");
    const clarify = await phone.next();
    expect(clarify.payload).toMatchObject({
      kind: "clarify",
      clarify_id: question.clarify_id,
      question: question.question,
      choices: question.choices,
      allow_free_text: true,
    });
    client.send({ type: "clarify.respond", clarify_id: question.clarify_id, response: "staging" });
    expect((await phone.next()).payload).toMatchObject({ kind: "resolved", clarify_id: question.clarify_id });
    expect((await phone.next()).payload).toMatchObject({ kind: "run_finished" });

    // /sim later: the run pushes run_finished; the agent's own output later pushes message, not both.
    const laterRun = await send(client, conv, "/sim later");
    await client.run(laterRun);
    // The agent's own run: the only run.accepted this client got without a request_id.
    const unsolicited = await client.nextAny((m) => m.type === "run.accepted" && m.request_id === undefined);
    const kinds = [(await phone.next()).payload, (await phone.next()).payload].map((p) => [p.kind, p.run_id]);
    expect(kinds).toEqual([
      ["run_finished", laterRun],
      ["message", (unsolicited as { run_id: string }).run_id],
    ]);

    const tested = await client.ok({ type: "push.test", subscription_id: subscriptionId }, "push.tested");
    expect(tested).toMatchObject({ ok: true, status: null, error: null });
    expect((await phone.next()).payload).toMatchObject({ kind: "test", subscription_id: subscriptionId });

    const list = await client.ok({ type: "push.list" }, "push.subscriptions");
    expect(list.subscriptions).toEqual([
      {
        subscription_id: subscriptionId,
        device_name: "Pixel 9",
        endpoint_origin: receiver.url,
        events: ["approval", "clarify", "run_finished", "message"],
        created_at: expect.any(String),
        last_success_at: expect.any(String),
        last_error: null,
      },
    ]);
    // The endpoint is a capability and the keys are secrets: never logged. Neither is the VAPID key.
    const vapid = JSON.parse(readFileSync(join(ts.dataDir, "vapid.json"), "utf8")) as { privateKey: string };
    const text = logs();
    expect(text).toContain('"msg":"push sent"');
    expect(text).not.toContain("phone-secret-path");
    expect(text).not.toContain(phone.keys.auth);
    expect(text).not.toContain(phone.keys.p256dh);
    expect(text).not.toContain(vapid.privateKey);
  });

  it("a follow-up queued from the phone is the user's run: run_finished, also after the app closed", async () => {
    const { ts, receiver } = await setup();
    const { client } = await connect(ts, ["push", "queue"]);
    const phone = receiver.endpoint("phone");
    await subscribe(client, phone, { events: ["approval", "run_finished", "message"] });
    const conv = await createConversation(client, "Queued");

    // The active run waits on an approval; the follow-up queues behind it; then the app closes.
    const first = await send(client, conv, "/sim approval");
    const asked = await client.next("approval.request");
    const queued = await client.ok(
      { type: "chat.send", conversation_id: conv, text: "and then this", queue: true },
      "run.queued",
    );
    expect((await phone.next()).payload).toMatchObject({ kind: "approval", approval_id: asked.approval_id });
    client.close();

    // Answered from the notification: the active run ends, the queued one runs with nobody connected.
    const answered = await http(ts.url, "POST", `/approvals/${asked.approval_id}`, {
      headers: { "content-type": "application/json" },
      body: Buffer.from(JSON.stringify({ choice: "once" })),
    });
    expect(answered.status).toBe(200);
    const pushes: Record<string, unknown>[] = [];
    while (pushes.length < 2) {
      const { payload } = await phone.next();
      if (payload.kind !== "resolved") pushes.push(payload);
    }
    expect(pushes.map((p) => [p.kind, p.run_id])).toEqual([
      ["run_finished", first],
      ["run_finished", queued.run_id],
    ]);
    expect(pushes[1]).toMatchObject({ status: "completed", conversation_id: conv });
  });

  it("re-subscribing the same endpoint updates it; events narrow what is pushed", async () => {
    const { ts, receiver } = await setup();
    const { client } = await connect(ts);
    const phone = receiver.endpoint("phone");
    const first = await subscribe(client, phone);
    const again = await subscribe(client, phone, { events: ["approval"], device_name: "Renamed" });
    expect(again).toBe(first);
    const list = await client.ok({ type: "push.list" }, "push.subscriptions");
    expect(list.subscriptions).toMatchObject([
      { subscription_id: first, device_name: "Renamed", events: ["approval"] },
    ]);
    const conv = await createConversation(client);
    await client.run(await send(client, conv, "hello"));
    const runId = await send(client, conv, "/sim approval");
    const asked = await client.next("approval.request");
    expect((await phone.next()).payload).toMatchObject({ kind: "approval", approval_id: asked.approval_id });
    client.send({ type: "approval.respond", approval_id: asked.approval_id, choice: "deny" });
    await client.run(runId);
    await phone.next(2); // its resolved
    const tested = await client.ok({ type: "push.test", subscription_id: first }, "push.tested");
    expect(tested.ok).toBe(true);
    await phone.next(3);
    // No run_finished at all: the subscription chose approvals only.
    expect(phone.received.map((p) => p.payload.kind)).toEqual(["approval", "resolved", "test"]);
  });
});

describe("presence", () => {
  it("skips a conversation's push only while a live connection says it is active there", async () => {
    const { ts, receiver } = await setup();
    const { client } = await connect(ts);
    const phone = receiver.endpoint("phone");
    await subscribe(client, phone);
    const conv = await createConversation(client);

    const watcher = await connect(ts);
    watcher.client.send({ type: "presence", state: "active", conversation_id: conv });
    await watcher.client.ok({ type: "ping" }, "pong"); // presence has no reply: a ping after it proves it was read
    const watched = await send(client, conv, "watched");
    await client.run(watched);

    watcher.client.send({ type: "presence", state: "background" });
    await watcher.client.ok({ type: "ping" }, "pong");
    const background = await send(client, conv, "background");
    await client.run(background);
    expect((await phone.next()).payload).toMatchObject({ kind: "run_finished", run_id: background });

    watcher.client.send({ type: "presence", state: "active", conversation_id: conv });
    await watcher.client.ok({ type: "ping" }, "pong");
    watcher.client.close();
    await watcher.client.closed;
    const gone = await send(client, conv, "after the watcher left");
    await client.run(gone);
    expect((await phone.next()).payload).toMatchObject({ kind: "run_finished", run_id: gone });
    // The watched run never produced a push: only the two later runs arrived, in order.
    expect(phone.received.map((p) => p.payload.run_id)).toEqual([background, gone]);
  });

  it("a malformed presence is bad_request and the connection lives on", async () => {
    const { ts } = await setup();
    const { client } = await connect(ts);
    const reply = await client.request({ type: "presence", state: "looking" }, "pong");
    expect(reply).toMatchObject({ type: "error", error: { code: "bad_request" } });
    await client.ok({ type: "ping" }, "pong");
  });
});

describe("delivery that a bad endpoint cannot hurt", () => {
  it("410 removes the subscription (push.test says only that it was not delivered)", async () => {
    const { ts, receiver } = await setup();
    const { client } = await connect(ts);
    const phone = receiver.endpoint("phone");
    const id = await subscribe(client, phone);
    phone.answer(410);
    const tested = await client.ok({ type: "push.test", subscription_id: id }, "push.tested");
    expect(tested).toMatchObject({ ok: false, status: null, error: "not delivered" });
    expect((await client.ok({ type: "push.list" }, "push.subscriptions")).subscriptions).toEqual([]);
    const again = await client.request({ type: "push.test", subscription_id: id }, "push.tested");
    expect(again).toMatchObject({ type: "error", error: { code: "not_found" } });
  });

  it("push.test and push.list tell no status or network error of the endpoint's host (no scanning oracle)", async () => {
    const { ts, receiver } = await setup();
    const { client } = await connect(ts);
    const tested = async (id: string) => {
      const { request_id: _id, ...reply } = await client.ok(
        { type: "push.test", subscription_id: id },
        "push.tested",
      );
      return reply;
    };
    const verdict = (id: string, ok: boolean) => ({
      type: "push.tested",
      subscription_id: id,
      ok,
      status: null,
      error: ok ? null : "not delivered",
    });
    for (const status of [500, 404, 403, 413, 307, 200, 201]) {
      const endpoint = receiver.endpoint(`status-${status}`);
      endpoint.answer(status);
      const id = await subscribe(client, endpoint);
      expect(await tested(id), `HTTP ${status}`).toEqual(verdict(id, status < 300));
    }
    // A port nothing listens on: the attempt fails with a connection error, not an HTTP status.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const { subscription_id: refused } = await client.ok(
      {
        type: "push.subscribe",
        endpoint: `http://127.0.0.1:${port}/x`,
        keys: receiver.endpoint("keys").keys,
      },
      "push.subscribed",
    );
    expect(await tested(refused)).toEqual(verdict(refused, false));
    const list = await client.ok({ type: "push.list" }, "push.subscriptions");
    expect(new Set(list.subscriptions.map((s) => s.last_error))).toEqual(new Set([null, "not delivered"]));
  });

  it("a hanging endpoint delays neither the run nor its frames (deltas measured with and without it)", async () => {
    // One delta per agent chunk, so both runs' delta sequences can be compared exactly.
    const { ts, receiver } = await setup({ deltaIntervalMs: 0 });
    const { client } = await connect(ts);
    const conv = await createConversation(client);
    const measure = async () => {
      const started = performance.now();
      const runId = await send(client, conv, "/sim long 20000");
      const frames = await client.run(runId);
      const deltas = frames
        .filter((m) => m.type === "message.delta")
        .map((m) => (m as { text: string }).text);
      return { frames, deltas, ms: performance.now() - started };
    };
    const without = await measure();
    const stuck = receiver.endpoint("stuck");
    stuck.answer(...Array<"hang">(10).fill("hang"));
    await subscribe(client, stuck);
    // A push is in flight and hanging before the measured run starts.
    await client.run(await send(client, conv, "warm up"));
    await stuck.requested(1);
    const withHang = await measure();
    // The run completed while the endpoint had still not answered its first request.
    expect(stuck.received).toEqual([]);
    expect(stuck.requests).toBe(1);
    const shape = (frames: ServerMessage[]) => frames.map((m) => m.type).filter((t) => t !== "message.delta");
    expect(shape(withHang.frames)).toEqual(shape(without.frames));
    expect(withHang.deltas.length).toBeGreaterThan(1);
    expect(withHang.deltas).toEqual(without.deltas);
    // Figures for the report (no threshold: the machine is shared).
    console.info(
      `/sim long 20000, ${without.deltas.length} deltas: ${without.ms.toFixed(0)} ms without, ${withHang.ms.toFixed(0)} ms with a hanging endpoint`,
    );
  });
});

describe("SSRF: endpoints that would make the server call into the owner's network", () => {
  it.each([
    "http://127.0.0.1:9/push",
    "https://127.0.0.1/push",
    "https://localhost/push",
    "https://[::1]/push",
    "https://169.254.169.254/latest",
    "https://10.0.0.1/push",
  ])("refuses %s with bad_request, never echoing it, and stores nothing", async (endpoint) => {
    const { ts, receiver } = await setup({ push: { retry: FAST_RETRY } });
    const { client } = await connect(ts);
    const keys = receiver.endpoint("x").keys;
    const reply = await client.request({ type: "push.subscribe", endpoint, keys }, "push.subscribed");
    expect(reply).toMatchObject({ type: "error", error: { code: "bad_request" } });
    expect(JSON.stringify(reply)).not.toContain(endpoint);
    expect((await client.ok({ type: "push.list" }, "push.subscriptions")).subscriptions).toEqual([]);
  });

  it("refuses keys that are not a P-256 point or a 16-byte secret", async () => {
    const { ts, receiver } = await setup();
    const { client } = await connect(ts);
    const phone = receiver.endpoint("phone");
    const notOnCurve = Buffer.alloc(65, 1);
    notOnCurve[0] = 4;
    const reply = await client.request(
      {
        type: "push.subscribe",
        endpoint: phone.endpoint,
        keys: { ...phone.keys, p256dh: notOnCurve.toString("base64url") },
      },
      "push.subscribed",
    );
    expect(reply).toMatchObject({
      type: "error",
      error: { code: "bad_request", message: "keys.p256dh: not a P-256 public key" },
    });
  });
});

describe("POST /approvals/{id} and /clarify/{id}", () => {
  const json = (body: unknown, headers: Record<string, string> = {}) => ({
    headers: { "content-type": "application/json", ...headers },
    body: Buffer.from(typeof body === "string" ? body : JSON.stringify(body)),
  });

  it("checks the id first, then the body; a stale id is 404 whatever it says", async () => {
    const { ts } = await setup();
    const { client } = await connect(ts, null);
    const conv = await createConversation(client);
    const unknown = await http(
      ts.url,
      "POST",
      "/approvals/0123456789abcdef0123456789abcdef",
      json({ choice: "nope" }),
    );
    expect(unknown.status).toBe(404);
    expect(JSON.parse(unknown.body.toString())).toEqual({
      error: { code: "approval_not_found", message: "Approval not found" },
    });

    const runId = await send(client, conv, "/sim approval");
    const asked = await client.next("approval.request");
    for (const bad of [
      { choice: "maybe" },
      {},
      "not json",
      [1],
      { choice: "deny", reason: "x".repeat(4001) },
    ]) {
      const res = await http(ts.url, "POST", `/approvals/${asked.approval_id}`, json(bad));
      expect(res.status, JSON.stringify(bad).slice(0, 40)).toBe(400);
      expect(JSON.parse(res.body.toString())).toMatchObject({ error: { code: "bad_request" } });
    }
    // Nothing was lost: the approval is still pending and a good answer goes through.
    const ok = await http(
      ts.url,
      "POST",
      `/approvals/${asked.approval_id}`,
      json({ choice: "deny", reason: "not now" }),
    );
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body.toString())).toEqual({
      approval_id: asked.approval_id,
      conversation_id: conv,
      choice: "deny",
      accepted: true,
    });
    // The broadcast is the one approval.respond makes, without request_id.
    expect(await client.next("approval.resolved")).toEqual({
      type: "approval.resolved",
      approval_id: asked.approval_id,
      choice: "deny",
      accepted: true,
    });
    const frames = await client.run(runId);
    expect((frames.find((m) => m.type === "message.complete") as { text: string }).text).toContain(
      'Your reason: "not now"',
    );
    const stale = await http(ts.url, "POST", `/approvals/${asked.approval_id}`, json({ choice: "once" }));
    expect(stale.status).toBe(404);
    expect(JSON.parse(stale.body.toString())).toMatchObject({ error: { code: "approval_not_found" } });
  });

  it("clarify: answered like clarify.respond; blank is 400; stale is 404", async () => {
    const { ts } = await setup();
    const { client } = await connect(ts, null);
    const conv = await createConversation(client);
    const runId = await send(client, conv, "/sim clarify");
    const question = await client.next("clarify.request");
    const blank = await http(ts.url, "POST", `/clarify/${question.clarify_id}`, json({ response: "   " }));
    expect(blank.status).toBe(400);
    const ok = await http(
      ts.url,
      "POST",
      `/clarify/${question.clarify_id}`,
      json({ response: "production" }),
    );
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body.toString())).toEqual({
      clarify_id: question.clarify_id,
      conversation_id: conv,
      accepted: true,
    });
    expect(await client.next("clarify.resolved")).toEqual({
      type: "clarify.resolved",
      clarify_id: question.clarify_id,
      accepted: true,
    });
    await client.run(runId);
    const stale = await http(
      ts.url,
      "POST",
      `/clarify/${question.clarify_id}`,
      json({ response: "staging" }),
    );
    expect(stale.status).toBe(404);
    expect(JSON.parse(stale.body.toString())).toEqual({
      error: { code: "clarify_not_found", message: "Clarification not found" },
    });
  });

  it("credentials as for attachments: 401, and the lockout (429) before any id is looked up", async () => {
    const { ts } = await setup({ lockout: { maxFailures: 3 } });
    const { client } = await connect(ts, null);
    const conv = await createConversation(client);
    await send(client, conv, "/sim approval");
    const asked = await client.next("approval.request");
    const path = `/approvals/${asked.approval_id}`;
    const none = await http(ts.url, "POST", path, { ...json({ choice: "once" }), auth: false });
    expect(none.status).toBe(401);
    for (const header of [{ "x-pheby-secret": "wrong-1" }, { authorization: "Bearer wrong-2" }] as Record<
      string,
      string
    >[]) {
      const res = await http(ts.url, "POST", path, { ...json({ choice: "once" }, header), auth: false });
      expect(res.status).toBe(401);
      expect(JSON.parse(res.body.toString())).toMatchObject({ error: { code: "unauthorized" } });
    }
    const third = await http(ts.url, "POST", "/clarify/x", {
      ...json({}, { authorization: "ApiKey wrong-3" }),
      auth: false,
    });
    expect(third.status).toBe(401);
    // Locked now: even the right secret gets 429, and the approval is still pending.
    const locked = await http(ts.url, "POST", path, json({ choice: "once" }));
    expect(locked.status).toBe(429);
    expect(JSON.parse(locked.body.toString())).toMatchObject({ error: { code: "rate_limited" } });
    const open = await client.ok(
      { type: "conversation.open", conversation_id: conv },
      "conversation.history",
    );
    expect(open.approvals.map((a) => a.approval_id)).toEqual([asked.approval_id]);
  });

  it("a body over 2 MiB is 413", async () => {
    const { ts } = await setup();
    const { client } = await connect(ts, null);
    const conv = await createConversation(client);
    await send(client, conv, "/sim clarify");
    const question = await client.next("clarify.request");
    const res = await http(
      ts.url,
      "POST",
      `/clarify/${question.clarify_id}`,
      json({ response: "x".repeat(2 * 1024 * 1024) }),
    );
    expect(res.status).toBe(413);
    expect(JSON.parse(res.body.toString())).toMatchObject({ error: { code: "too_large" } });
  });
});

describe("subscriptions and paired devices", () => {
  /** A server, the owner's connection (push, devices), and a paired device's connection (push). */
  async function ownerAndPairedPhone() {
    const { ts, receiver } = await setup({ publicUrl: "wss://pheby.example.com/ws" });
    const owner = await helloWith(ts, ["push", "devices"]);
    cleanups.push(() => owner.close());
    const device = await pairDevice(ts, owner);
    const phone = await helloWith(ts, ["push"], device.secret);
    cleanups.push(() => phone.close());
    return { ts, receiver, owner, device, phone };
  }

  it("records the device that subscribed: a device sees and removes its own, the owner all; revoking removes them", async () => {
    const { receiver, owner, device, phone } = await ownerAndPairedPhone();

    const ownerSub = await subscribe(owner, receiver.endpoint("owner-browser"));
    const phoneSub = await subscribe(phone, receiver.endpoint("phone"));
    const mine = await phone.ok({ type: "push.list" }, "push.subscriptions");
    expect(mine.subscriptions.map((s) => s.subscription_id)).toEqual([phoneSub]);
    const all = await owner.ok({ type: "push.list" }, "push.subscriptions");
    expect(all.subscriptions.map((s) => s.subscription_id).sort()).toEqual([ownerSub, phoneSub].sort());
    // Another credential's subscription does not exist for a device (the same answer as an unknown ID).
    for (const type of ["push.unsubscribe", "push.test"]) {
      const reply = await phone.request({ type, subscription_id: ownerSub }, "push.unsubscribed");
      expect(reply).toMatchObject({ type: "error", error: { code: "not_found" } });
    }
    expect((await phone.ok({ type: "push.test", subscription_id: phoneSub }, "push.tested")).ok).toBe(true);

    await owner.ok({ type: "device.revoke", device_id: device.id }, "device.revoked");
    const left = await owner.ok({ type: "push.list" }, "push.subscriptions");
    expect(left.subscriptions.map((s) => s.subscription_id)).toEqual([ownerSub]);
  });

  it("a device's presence silences only that device's own subscriptions, never the owner's", async () => {
    const { receiver, owner, phone } = await ownerAndPairedPhone();
    const ownerEndpoint = receiver.endpoint("owner-browser");
    const phoneEndpoint = receiver.endpoint("phone");
    await subscribe(owner, ownerEndpoint, { events: ["run_finished"] });
    await subscribe(phone, phoneEndpoint, { events: ["run_finished"] });
    const conv = await createConversation(owner, "Shared");

    // The phone looks at the conversation: its own subscription is skipped, the owner's is not.
    phone.send({ type: "presence", state: "active", conversation_id: conv });
    await phone.ok({ type: "ping" }, "pong");
    const watchedByPhone = await send(owner, conv, "the phone is looking");
    await owner.run(watchedByPhone);
    expect((await ownerEndpoint.next()).payload).toMatchObject({
      kind: "run_finished",
      run_id: watchedByPhone,
    });

    // Now the owner's console looks and the phone does not: the other way round.
    phone.send({ type: "presence", state: "background" });
    owner.send({ type: "presence", state: "active", conversation_id: conv });
    await owner.ok({ type: "ping" }, "pong");
    await phone.ok({ type: "ping" }, "pong");
    const watchedByOwner = await send(owner, conv, "the owner is looking");
    await owner.run(watchedByOwner);
    expect((await phoneEndpoint.next()).payload).toMatchObject({
      kind: "run_finished",
      run_id: watchedByOwner,
    });

    // Both look elsewhere: both get it (and this last push proves the earlier ones were not late).
    owner.send({ type: "presence", state: "background" });
    await owner.ok({ type: "ping" }, "pong");
    const unwatched = await send(owner, conv, "nobody is looking");
    await owner.run(unwatched);
    expect((await ownerEndpoint.next()).payload).toMatchObject({ run_id: unwatched });
    expect((await phoneEndpoint.next()).payload).toMatchObject({ run_id: unwatched });
    expect(ownerEndpoint.received.map((p) => p.payload.run_id)).toEqual([watchedByPhone, unwatched]);
    expect(phoneEndpoint.received.map((p) => p.payload.run_id)).toEqual([watchedByOwner, unwatched]);
  });

  it("the operator's revoke-all (another process, server running) removes the devices' subscriptions at once", async () => {
    const { ts, receiver, owner, device, phone } = await ownerAndPairedPhone();
    const phoneSub = await subscribe(phone, receiver.endpoint("phone"));
    const before = await owner.ok({ type: "push.list" }, "push.subscriptions");
    expect(before.subscriptions.map((s) => s.subscription_id)).toEqual([phoneSub]);

    const admin = openDeviceAdmin(ts.dataDir);
    if (!admin) throw new Error("no database in the data directory");
    try {
      expect(admin.revokeAll()).toEqual([device.id]);
    } finally {
      admin.close();
    }
    const after = await owner.ok({ type: "push.list" }, "push.subscriptions");
    expect(after.subscriptions).toEqual([]);
    const test = await owner.request({ type: "push.test", subscription_id: phoneSub }, "push.tested");
    expect(test).toMatchObject({ type: "error", error: { code: "not_found" } });
  });
});
