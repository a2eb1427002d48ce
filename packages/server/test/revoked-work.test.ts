/**
 * What a device set in motion, and what nobody started from a client, through a real server and
 * real SQLite: revoking a device (over the socket, and the operator's `devices revoke-all`) removes
 * its schedules and queued runs, cancels its active run and switches off the YOLO it switched on,
 * telling the other connections; a schedule's run is never approved by YOLO unless its schedule has
 * `auto_approve` (which only the master secret sets), also after a restart.
 */
import { DEFAULT_FEATURES } from "@pheby/client";
import {
  FEATURE_DEVICES,
  FEATURE_QUEUE,
  FEATURE_SCHEDULES,
  type ServerMessage,
  type ServerMessageOf,
} from "@pheby/protocol";
import { afterEach, describe, expect, it } from "vitest";
import type { TurnSink } from "../src/agent/port.js";
import { openDeviceAdmin } from "../src/devices/admin.js";
import {
  createConversation,
  phebyClient,
  RawClient,
  SECRET,
  scriptedBackend,
  startServer,
  type TestServer,
  tempDir,
} from "./helpers.js";
import { ManualClock } from "./manual-clock.js";

const T0 = Date.parse("2026-03-27T12:00:00Z");
const FEATURES = [FEATURE_DEVICES, FEATURE_SCHEDULES, FEATURE_QUEUE];

/**
 * "hold" runs until cancelled; "ask" asks permission for a command and answers with what it was
 * told; anything else answers "ok".
 */
const backend = () =>
  scriptedBackend("scripted", async (input, sink: TurnSink, signal) => {
    if (input.text === "hold") {
      await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
      return { status: "cancelled" };
    }
    if (input.text.startsWith("ask")) {
      const answer = await sink.askPermission({
        command: "rm -rf build",
        description: "Destructive shell command",
        choices: ["once", "deny"],
      });
      sink.text(answer.outcome === "selected" ? `chose ${answer.choice}` : answer.outcome);
      return { status: "completed" };
    }
    sink.text("ok");
    return { status: "completed" };
  });

describe("work a device or nobody set in motion", () => {
  const servers: TestServer[] = [];
  const clients: RawClient[] = [];
  afterEach(async () => {
    for (const c of clients.splice(0)) c.close();
    for (const s of servers.splice(0)) await s.cleanup();
  });

  async function serve(options: Parameters<typeof startServer>[0] = {}) {
    const server = await startServer({
      transport: "memory",
      publicUrl: "wss://pheby.example.com/ws",
      agent: backend(),
      ...options,
    });
    servers.push(server);
    return server;
  }

  async function connect(server: TestServer, secret = SECRET) {
    const client = await RawClient.open(server.wsUrl);
    clients.push(client);
    client.send({ type: "hello", secret, protocol_version: 1, features: FEATURES });
    await client.next("ready");
    return client;
  }

  /** Pair a device through `owner`; returns its ID and a connection on its own secret. */
  async function pairedDevice(server: TestServer, owner: RawClient) {
    const { code } = await owner.ok({ type: "pair.create" }, "pair.created");
    const pairing = await RawClient.open(server.wsUrl);
    pairing.send({ type: "hello", protocol_version: 1, features: [FEATURE_DEVICES], pairing_code: code });
    const ready = await pairing.next("ready");
    pairing.close();
    const device = ready.device!;
    return { id: device.device_id, phone: await connect(server, device.device_secret) };
  }

  const schedule = (
    conv: string,
    prompt: string,
    extra: Record<string, unknown> = { cron: "* * * * *" },
  ) => ({
    type: "schedule.create",
    conversation_id: conv,
    prompt,
    ...extra,
  });

  it("device.revoke removes the device's schedules and queued runs, cancels its run and its YOLO, and tells the others", async () => {
    const clock = new ManualClock(T0);
    const server = await serve({ clock });
    const owner = await connect(server);
    const conv = await createConversation(owner);
    const { id, phone } = await pairedDevice(server, owner);

    // The thief's phone: YOLO on, a one-shot and a every-minute schedule, a held run and a follow-up.
    await phone.ok({ type: "yolo.set", conversation_id: conv, enabled: true }, "yolo.changed");
    const cron = await phone.ok(schedule(conv, "ask rm -rf ~"), "schedule.created");
    const once = await phone.ok(
      schedule(conv, "ask once", { at: new Date(T0 + 30 * 60_000).toISOString() }),
      "schedule.created",
    );
    const mine = await owner.ok(schedule(conv, "owner's", { cron: "0 8 * * *" }), "schedule.created");
    const held = await phone.ok({ type: "chat.send", conversation_id: conv, text: "hold" }, "run.accepted");
    const queued = await phone.ok(
      { type: "chat.send", conversation_id: conv, text: "ask queued", queue: true },
      "run.queued",
    );
    expect(queued.position).toBe(1);
    const ownQueued = await owner.ok(
      { type: "chat.send", conversation_id: conv, text: "owner's follow-up", queue: true },
      "run.queued",
    );
    const seen = owner.frames.length;

    await owner.ok({ type: "device.revoke", device_id: id }, "device.revoked");
    const after = (): ServerMessage[] => owner.frames.slice(seen);
    expect(await owner.next("run.finished", (m) => m.run_id === held.run_id)).toMatchObject({
      status: "cancelled",
    });
    // The owner's own follow-up starts next; the device's never does.
    await owner.next("run.finished", (m) => m.run_id === ownQueued.run_id);
    const deleted = after().filter(
      (f): f is ServerMessageOf<"schedule.changed"> => f.type === "schedule.changed",
    );
    expect(deleted.map((f) => [f.schedule.schedule_id, f.deleted]).sort()).toEqual(
      [
        [cron.schedule.schedule_id, true],
        [once.schedule.schedule_id, true],
      ].sort(),
    );
    // Only the device's follow-up left the queue, before the cancelled run ended.
    const queues = after().filter((f): f is ServerMessageOf<"queue.changed"> => f.type === "queue.changed");
    expect(queues[0]!.queued.map((q) => q.run_id)).toEqual([ownQueued.run_id]);
    expect(after().filter((f) => f.type === "yolo.changed")).toEqual([
      { type: "yolo.changed", enabled: false, scope: "conversation", conversation_id: conv },
    ]);
    expect(
      after()
        .filter((f) => f.type === "run.accepted")
        .map((f) => f.run_id),
    ).toEqual([ownQueued.run_id]);
    expect((await owner.ok({ type: "schedule.list" }, "schedule.snapshot")).schedules).toEqual([
      mine.schedule,
    ]);
    expect(await owner.ok({ type: "yolo.current", conversation_id: conv }, "yolo.snapshot")).toMatchObject({
      enabled: false,
    });
    // The minute comes and goes: nothing of the device runs.
    clock.advanceTo(T0 + 31 * 60_000);
    await owner.ok({ type: "ping" }, "pong");
    expect(
      after()
        .filter((f) => f.type === "run.accepted")
        .map((f) => f.run_id),
    ).toEqual([ownQueued.run_id]);
  });

  it("YOLO the owner switched on stays on when a device is revoked", async () => {
    const server = await serve();
    const owner = await connect(server);
    const conv = await createConversation(owner);
    const { id, phone } = await pairedDevice(server, owner);
    await phone.ok({ type: "yolo.set", conversation_id: conv, enabled: true }, "yolo.changed");
    // The owner switches it on again: from now on it is the owner's.
    await owner.ok({ type: "yolo.set", conversation_id: conv, enabled: true }, "yolo.changed");
    await owner.ok({ type: "device.revoke", device_id: id }, "device.revoked");
    expect(await owner.ok({ type: "yolo.current", conversation_id: conv }, "yolo.snapshot")).toMatchObject({
      enabled: true,
    });
  });

  it("devices revoke-all removes the devices' schedules, queued runs and YOLO from the database", async () => {
    const dataDir = tempDir();
    const first = await startServer({
      transport: "memory",
      agent: backend(),
      publicUrl: "wss://p.example/ws",
      dataDir,
    });
    const owner = await connect(first);
    const conv = await createConversation(owner);
    const { phone } = await pairedDevice(first, owner);
    await phone.ok({ type: "yolo.set", conversation_id: conv, enabled: true }, "yolo.changed");
    await phone.ok(schedule(conv, "ask every minute"), "schedule.created");
    const mine = await owner.ok(schedule(conv, "owner's", { cron: "0 8 * * *" }), "schedule.created");
    // A follow-up the device queued behind the owner's held run, left in the queue by the stop.
    await owner.ok({ type: "chat.send", conversation_id: conv, text: "hold" }, "run.accepted");
    await phone.ok(
      { type: "chat.send", conversation_id: conv, text: "ask later", queue: true },
      "run.queued",
    );
    owner.close();
    phone.close();
    await first.close();

    const admin = openDeviceAdmin(dataDir)!;
    expect(admin.revokeAll()).toHaveLength(1);
    admin.close();

    const second = await serve({ dataDir });
    servers.push(first);
    const back = await connect(second);
    expect((await back.ok({ type: "schedule.list" }, "schedule.snapshot")).schedules).toEqual([
      mine.schedule,
    ]);
    expect(await back.ok({ type: "yolo.current", conversation_id: conv }, "yolo.snapshot")).toMatchObject({
      enabled: false,
    });
    const history = await back.ok(
      { type: "conversation.open", conversation_id: conv },
      "conversation.history",
    );
    expect(history.queue).toEqual([]);
  });

  /** A conversation with YOLO on (the owner's) and a one-shot schedule that asks permission, due at T0 + 1 min. */
  async function yoloWithSchedule(server: TestServer, extra: Record<string, unknown> = {}) {
    const owner = await connect(server);
    const conv = await createConversation(owner);
    await owner.ok({ type: "yolo.set", conversation_id: conv, enabled: true }, "yolo.changed");
    const created = await owner.ok(
      schedule(conv, "ask scheduled", { at: new Date(T0 + 60_000).toISOString(), ...extra }),
      "schedule.created",
    );
    return { owner, conv, created };
  }

  it("a schedule's run is not approved by YOLO: the question goes to the user", async () => {
    const clock = new ManualClock(T0);
    const server = await serve({ clock });
    const { owner, created } = await yoloWithSchedule(server);
    expect(created.schedule).toMatchObject({ created_by: "user", confirmed: true, auto_approve: false });
    clock.advanceTo(T0 + 60_000);
    const asked = await owner.next("approval.request");
    expect(asked.command).toBe("rm -rf build");
    owner.send({ type: "approval.respond", approval_id: asked.approval_id, choice: "deny" });
    const finished = await owner.next("run.finished", (m) => m.run_id === asked.run_id);
    expect(finished.status).toBe("completed");
    // A run the owner starts in the same conversation is still approved by YOLO.
    const own = await owner.ok(
      { type: "chat.send", conversation_id: created.schedule.conversation_id, text: "ask me" },
      "run.accepted",
    );
    const frames = await owner.run(own.run_id);
    expect(frames.find((f) => f.type === "message.complete")).toMatchObject({ text: "chose once" });
    expect(owner.frames.filter((f) => f.type === "approval.request")).toHaveLength(1);
  });

  it("auto_approve, set by the master secret, lets YOLO approve the schedule's runs", async () => {
    const clock = new ManualClock(T0);
    const server = await serve({ clock });
    const { owner, created } = await yoloWithSchedule(server, { auto_approve: true });
    expect(created.schedule.auto_approve).toBe(true);
    clock.advanceTo(T0 + 60_000);
    const accepted = await owner.next("run.accepted", (m) => m.request_id === undefined);
    const frames = await owner.run(accepted.run_id);
    expect(frames.find((f) => f.type === "message.complete")).toMatchObject({ text: "chose once" });
    expect(owner.frames.some((f) => f.type === "approval.request")).toBe(false);
  });

  it("a device may not set auto_approve, nor change an auto-approving schedule's prompt (bad_request); it may confirm", async () => {
    const server = await serve();
    const owner = await connect(server);
    const conv = await createConversation(owner);
    const { phone } = await pairedDevice(server, owner);
    const refused = await phone.request(
      schedule(conv, "p", { cron: "0 8 * * *", auto_approve: true }),
      "schedule.created",
    );
    expect(refused).toMatchObject({
      type: "error",
      error: { code: "bad_request", message: "only the owner (the master secret) may set auto_approve" },
    });
    const { schedule: own } = await phone.ok(schedule(conv, "p", { cron: "0 8 * * *" }), "schedule.created");
    expect(
      await phone.request(
        { type: "schedule.update", schedule_id: own.schedule_id, auto_approve: true },
        "schedule.changed",
      ),
    ).toMatchObject({
      type: "error",
      error: { code: "bad_request" },
    });
    // Switching it off is always allowed.
    expect(
      await phone.ok(
        { type: "schedule.update", schedule_id: own.schedule_id, auto_approve: false },
        "schedule.changed",
      ),
    ).toMatchObject({ schedule: { auto_approve: false } });
    const approved = await owner.ok(
      schedule(conv, "nightly", { cron: "0 2 * * *", auto_approve: true }),
      "schedule.created",
    );
    expect(
      await phone.request(
        { type: "schedule.update", schedule_id: approved.schedule.schedule_id, prompt: "rm -rf ~" },
        "schedule.changed",
      ),
    ).toMatchObject({
      type: "error",
      error: {
        code: "bad_request",
        message: "only the owner (the master secret) may change the prompt of a schedule with auto_approve",
      },
    });
    expect((await owner.ok({ type: "schedule.list" }, "schedule.snapshot")).schedules[1]).toMatchObject({
      prompt: "nightly",
      auto_approve: true,
    });
    // The owner may switch auto_approve on for an existing schedule (here with @pheby/client's helper).
    const app = await phebyClient(server, { features: [...DEFAULT_FEATURES, FEATURE_SCHEDULES] });
    expect(await app.setScheduleAutoApprove(own.schedule_id, true)).toMatchObject({ auto_approve: true });
    app.close();
  });

  it("a scheduled prompt queued at a restart is still not approved by YOLO when it starts after it", async () => {
    const clock = new ManualClock(T0);
    const dataDir = tempDir();
    const first = await startServer({ transport: "memory", agent: backend(), clock, dataDir });
    const { owner, conv } = await yoloWithSchedule(first);
    // Busy when it is due: it joins the queue, then the server stops.
    await owner.ok({ type: "chat.send", conversation_id: conv, text: "hold" }, "run.accepted");
    clock.advanceTo(T0 + 60_000);
    await owner.next("queue.changed", (m) => m.queued.length === 1);
    owner.close();
    await first.close();

    const second = await serve({ clock, dataDir });
    servers.push(first);
    const back = await connect(second);
    const pending = async () =>
      (await back.ok({ type: "conversation.open", conversation_id: conv }, "conversation.history")).approvals;
    await expect.poll(async () => (await pending()).length).toBe(1);
    expect((await pending())[0]).toMatchObject({ command: "rm -rf build" });
  });
});
