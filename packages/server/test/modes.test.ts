/**
 * The `modes` extension through a real server and the simulator: negotiation (v1 gets none of it),
 * listing without starting anything, `mode.set` and who hears of it, YOLO's precedence, the mode a
 * turn really runs in (the simulator's `/sim mode`), persistence across a restart on the same SQLite
 * file, runs nobody started from a client, and a revoked device's choice undone. Every frame each
 * client receives must fit the features it enabled (test/setup.ts).
 */
import {
  FEATURE_DEVICES,
  FEATURE_MODES,
  FEATURE_RESUME,
  FEATURE_SCHEDULES,
  type ServerMessageOf,
} from "@pheby/protocol";
import { afterEach, describe, expect, it } from "vitest";
import { createSimulatorBackend, SIM_COMMANDS } from "../src/agent/simulator/index.js";
import {
  createConversation,
  helloWith,
  pairDevice,
  RawClient,
  startServer,
  type TestServer,
  tempDir,
} from "./helpers.js";
import { ManualClock } from "./manual-clock.js";

const MODES = [FEATURE_MODES];

describe("the modes extension", () => {
  const servers: TestServer[] = [];
  const clients: RawClient[] = [];
  afterEach(async () => {
    for (const c of clients.splice(0)) c.close();
    for (const s of servers.splice(0)) await s.cleanup();
  });

  async function serve(options: Parameters<typeof startServer>[0] = {}) {
    const server = await startServer({ transport: "memory", ...options });
    servers.push(server);
    return server;
  }
  async function connect(server: TestServer, features?: string[]) {
    const client = await RawClient.connect(server.wsUrl, features ? { features } : {});
    clients.push(client);
    return client;
  }
  /** The answer text of a chat message (the simulator's `/sim mode` says the turn's mode). */
  async function answer(client: RawClient, conversation_id: string, text: string): Promise<string> {
    const accepted = await client.ok({ type: "chat.send", conversation_id, text }, "run.accepted");
    const frames = await client.run(accepted.run_id);
    const done = frames.find((f) => f.type === "message.complete") as ServerMessageOf<"message.complete">;
    return done.text;
  }
  const snapshot = (c: RawClient, conversation_id: string) =>
    c.ok({ type: "modes.list", conversation_id }, "modes.snapshot");

  it("is negotiated: a v1 connection gets unknown_type, none of its events and no mode_id", async () => {
    const server = await serve();
    const v1 = await connect(server);
    const modes = await connect(server, ["x-unknown", FEATURE_MODES]);
    expect(modes.features).toEqual(MODES);
    const conv = await createConversation(modes);
    for (const type of ["modes.list", "commands.list"]) {
      expect(await v1.request({ type, conversation_id: conv })).toMatchObject({
        type: "error",
        error: { code: "unknown_type", message: "unknown message type" },
      });
    }
    expect(await v1.request({ type: "mode.set", conversation_id: conv, mode_id: "plan" })).toMatchObject({
      error: { code: "unknown_type" },
    });
    await modes.ok({ type: "mode.set", conversation_id: conv, mode_id: "yolo" }, "mode.changed");
    await modes.ok({ type: "mode.set", conversation_id: conv, mode_id: "plan" }, "mode.changed");
    await v1.ok({ type: "ping" }, "pong");
    // YOLO is v1: a v1 connection sees it go on and off, and nothing of the modes.
    expect(v1.frames.map((f) => f.type)).not.toContain("mode.changed");
    const history = await v1.ok({ type: "conversation.open", conversation_id: conv }, "conversation.history");
    expect("mode_id" in history).toBe(false);
    const modal = await modes.ok(
      { type: "conversation.open", conversation_id: conv },
      "conversation.history",
    );
    expect(modal.mode_id).toBe("plan");
  });

  it("lists the agent's modes and commands, marks those that approve without asking, never starts a run", async () => {
    const server = await serve();
    const c = await connect(server, MODES);
    const conv = await createConversation(c);
    const listed = await snapshot(c, conv);
    expect(listed).toMatchObject({ conversation_id: conv, current_mode_id: "default" });
    expect(listed.modes.map((m) => [m.mode_id, m.auto_approves])).toEqual([
      ["default", false],
      ["plan", false],
      ["auto-edit", true],
      ["yolo", true],
    ]);
    const commands = await c.ok({ type: "commands.list", conversation_id: conv }, "commands.snapshot");
    expect(commands.commands.map((m) => m.name)).toEqual(SIM_COMMANDS.map((m) => m.name));
    expect(commands.commands).toContainEqual({
      name: "sim long",
      description: "An answer of exactly N characters",
      hint: "N (1..1000000)",
    });
    expect(c.frames.map((f) => f.type)).not.toContain("run.accepted");
    await c.expectError({ type: "modes.list", conversation_id: "nope" }, "conversation_not_found", "list");
    await c.expectError({ type: "commands.list", conversation_id: "nope" }, "conversation_not_found", "list");
  });

  it("mode.set: the reply to the requester, mode.changed to the other modes connections, the turn runs in it", async () => {
    const server = await serve();
    const a = await connect(server, MODES);
    const b = await connect(server, MODES);
    const conv = await createConversation(a);
    expect(await answer(a, conv, "/sim mode")).toBe("This turn runs in the default mode (Default).");
    const reply = await a.ok({ type: "mode.set", conversation_id: conv, mode_id: "plan" }, "mode.changed");
    expect(reply).toMatchObject({ conversation_id: conv, mode_id: "plan", request_id: expect.any(String) });
    const other = await b.next("mode.changed");
    expect(other).toEqual({ type: "mode.changed", conversation_id: conv, mode_id: "plan" });
    expect(await answer(a, conv, "/sim mode")).toBe("This turn runs in the plan mode (Plan).");
    expect((await snapshot(b, conv)).current_mode_id).toBe("plan");
    await a.expectError(
      { type: "mode.set", conversation_id: conv, mode_id: "turbo" },
      "bad_request",
      "an unknown mode",
    );
    await a.expectError(
      { type: "mode.set", conversation_id: "nope", mode_id: "plan" },
      "conversation_not_found",
      "an unknown conversation",
    );
    expect((await snapshot(a, conv)).current_mode_id).toBe("plan");
  });

  it("the agent leaving a mode by itself makes that the conversation's mode", async () => {
    const server = await serve();
    const a = await connect(server, MODES);
    const conv = await createConversation(a);
    await a.ok({ type: "mode.set", conversation_id: conv, mode_id: "plan" }, "mode.changed");
    const changed = a.upcoming((m) => m.type === "mode.changed");
    expect(await answer(a, conv, "/sim mode leave")).toContain("I left the plan mode by myself");
    expect(await changed).toEqual({ type: "mode.changed", conversation_id: conv, mode_id: "default" });
    expect((await snapshot(a, conv)).current_mode_id).toBe("default");
  });

  it("YOLO: its mode while on, the chosen mode back when off; choosing another mode turns it off", async () => {
    const server = await serve();
    const a = await connect(server, MODES);
    const b = await connect(server, MODES);
    const conv = await createConversation(a);
    await a.ok({ type: "mode.set", conversation_id: conv, mode_id: "plan" }, "mode.changed");
    await b.next("mode.changed", (m) => m.mode_id === "plan");

    // Choosing YOLO's mode is yolo.set true: both events, to everyone who enabled them.
    await a.ok({ type: "mode.set", conversation_id: conv, mode_id: "yolo" }, "mode.changed");
    expect(await b.next("yolo.changed")).toMatchObject({ enabled: true, conversation_id: conv });
    expect(await b.next("mode.changed")).toMatchObject({ mode_id: "yolo" });
    expect(await a.ok({ type: "yolo.current", conversation_id: conv }, "yolo.snapshot")).toMatchObject({
      enabled: true,
    });
    expect(await answer(a, conv, "/sim mode")).toBe("This turn runs in the yolo mode (YOLO).");

    // yolo.set false returns to the chosen mode.
    await a.ok({ type: "yolo.set", conversation_id: conv, enabled: false }, "yolo.changed");
    expect(await b.next("mode.changed")).toMatchObject({ mode_id: "plan" });
    expect(await answer(a, conv, "/sim mode")).toBe("This turn runs in the plan mode (Plan).");

    // yolo.set true puts the conversation in YOLO's mode; choosing another mode turns YOLO off.
    await a.ok({ type: "yolo.set", conversation_id: conv, enabled: true }, "yolo.changed");
    expect(await b.next("mode.changed")).toMatchObject({ mode_id: "yolo" });
    await a.ok({ type: "mode.set", conversation_id: conv, mode_id: "auto-edit" }, "mode.changed");
    expect(await b.next("yolo.changed")).toMatchObject({ enabled: false });
    expect(await b.next("mode.changed")).toMatchObject({ mode_id: "auto-edit" });
    expect(await a.ok({ type: "yolo.current", conversation_id: conv }, "yolo.snapshot")).toMatchObject({
      enabled: false,
    });
    expect(await answer(a, conv, "/sim mode")).toBe("This turn runs in the auto-edit mode (Auto-edit).");
  });

  it("the chosen mode and the agent's lists outlive a restart (same SQLite file); listing starts nothing", async () => {
    const dataDir = tempDir();
    const first = await startServer({ transport: "memory", dataDir });
    const a = await RawClient.connect(first.wsUrl, { features: MODES });
    const conv = await createConversation(a);
    await a.ok({ type: "mode.set", conversation_id: conv, mode_id: "plan" }, "mode.changed");
    a.close();
    await first.close();

    let prompted = 0;
    const sim = createSimulatorBackend({ delayMs: 1 });
    const prompt = sim.prompt.bind(sim);
    sim.prompt = (input, sink, signal) => {
      prompted++;
      return prompt(input, sink, signal);
    };
    const second = await serve({ dataDir, agent: sim });
    const b = await connect(second, [...MODES, FEATURE_RESUME]);
    const listed = await snapshot(b, conv);
    expect(listed.current_mode_id).toBe("plan");
    expect(listed.modes).toHaveLength(4);
    const commands = await b.ok({ type: "commands.list", conversation_id: conv }, "commands.snapshot");
    expect(commands.commands).toHaveLength(SIM_COMMANDS.length);
    expect(prompted).toBe(0);
    // The restarted agent knows no mode of this session: the turn puts it back in the chosen one.
    expect(await answer(b, conv, "/sim mode")).toBe("This turn runs in the plan mode (Plan).");
    const history = await b.ok({ type: "conversation.open", conversation_id: conv }, "conversation.history");
    expect(history).toMatchObject({ mode_id: "plan", seq: expect.any(Number) });
  });

  it("a scheduled run nobody started runs in an asking mode, whatever was chosen; YOLO's too", async () => {
    const clock = new ManualClock(Date.parse("2026-03-27T12:00:00Z"));
    const server = await serve({ clock });
    const a = await connect(server, [...MODES, FEATURE_SCHEDULES]);
    const conv = await createConversation(a);
    await a.ok({ type: "mode.set", conversation_id: conv, mode_id: "auto-edit" }, "mode.changed");
    await a.ok(
      { type: "schedule.create", conversation_id: conv, prompt: "/sim mode", at: "2026-03-27T12:05:00Z" },
      "schedule.created",
    );
    clock.advanceTo(Date.parse("2026-03-27T12:05:00Z"));
    const accepted = await a.next("run.accepted", (m) => m.request_id === undefined);
    const frames = await a.run(accepted.run_id);
    expect(frames.find((f) => f.type === "message.complete")).toMatchObject({
      text: "This turn runs in the default mode (Default).",
    });
    // The conversation's choice is untouched, and a client's turn runs in it again.
    expect((await snapshot(a, conv)).current_mode_id).toBe("auto-edit");
    expect(await answer(a, conv, "/sim mode")).toBe("This turn runs in the auto-edit mode (Auto-edit).");

    await a.ok({ type: "mode.set", conversation_id: conv, mode_id: "yolo" }, "mode.changed");
    await a.ok(
      { type: "schedule.create", conversation_id: conv, prompt: "/sim mode", at: "2026-03-27T12:10:00Z" },
      "schedule.created",
    );
    clock.advanceTo(Date.parse("2026-03-27T12:10:00Z"));
    const again = await a.next("run.accepted", (m) => m.request_id === undefined);
    expect((await a.run(again.run_id)).find((f) => f.type === "message.complete")).toMatchObject({
      text: "This turn runs in the default mode (Default).",
    });
  });

  it("revoking a device undoes its choice of a mode that approves without asking (mode.changed)", async () => {
    const server = await serve({ publicUrl: "wss://pheby.example.com/ws" });
    const owner = await connect(server, [FEATURE_DEVICES, ...MODES]);
    const conv = await createConversation(owner);
    const { id, secret } = await pairDevice(server, owner);
    const phone = await helloWith(server, MODES, secret);
    clients.push(phone);
    await phone.ok({ type: "mode.set", conversation_id: conv, mode_id: "auto-edit" }, "mode.changed");
    await owner.next("mode.changed", (m) => m.mode_id === "auto-edit");
    await owner.ok({ type: "device.revoke", device_id: id }, "device.revoked");
    expect(await owner.next("mode.changed")).toEqual({
      type: "mode.changed",
      conversation_id: conv,
      mode_id: "default",
    });
    expect((await snapshot(owner, conv)).current_mode_id).toBe("default");
  });

  it("a device's choice of a mode that asks stays after its revoke", async () => {
    const server = await serve({ publicUrl: "wss://pheby.example.com/ws" });
    const owner = await connect(server, [FEATURE_DEVICES, ...MODES]);
    const conv = await createConversation(owner);
    const { id, secret } = await pairDevice(server, owner);
    const phone = await helloWith(server, MODES, secret);
    clients.push(phone);
    await phone.ok({ type: "mode.set", conversation_id: conv, mode_id: "plan" }, "mode.changed");
    await owner.ok({ type: "device.revoke", device_id: id }, "device.revoked");
    await owner.ok({ type: "ping" }, "pong");
    expect((await snapshot(owner, conv)).current_mode_id).toBe("plan");
  });
});
