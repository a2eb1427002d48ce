// The `modes` extension through the client's typed calls, end to end against a real @pheby/server
// (its in-memory linked server, imported from its build by path as in in-memory.test.ts) whose agent is
// the simulator: the agent's modes and commands, a mode switch heard by every other `modes`
// connection and by no other, the conversation's mode in its history.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FEATURE_MODES, type ServerMessage } from "@pheby/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createInMemoryServer, createSimulatorBackend } from "../../server/dist/index.js";
import { DEFAULT_FEATURES, PhebyClient, type PhebyClientOptions, PhebyError } from "../src/index.js";
import { defaultHandler, ScriptedPeer, TS } from "./peer.js";

const SECRET = "in-memory-secret-0123456789";

describe("modes: the facade's frames, against a scripted peer", () => {
  let peer: ScriptedPeer;
  let client: PhebyClient;
  beforeAll(async () => {
    peer = await ScriptedPeer.start();
    peer.handler = (frame, conn) => {
      const base = { request_id: frame.request_id, conversation_id: frame.conversation_id, ts: TS };
      switch (frame.type) {
        case "hello":
          return [{ type: "ready", protocol_version: 1, server: "pheby", ts: TS, features: ["modes"] }].map(
            (r) => ({ ...r, request_id: frame.request_id }),
          );
        case "modes.list":
          return [
            {
              type: "modes.snapshot",
              ...base,
              modes: [
                { mode_id: "default", name: "Default", description: null, auto_approves: false },
                { mode_id: "yolo", name: "YOLO", description: "No questions", auto_approves: true },
              ],
              current_mode_id: null,
            },
          ];
        case "mode.set":
          return frame.mode_id === "nope"
            ? [{ type: "error", ...base, error: { code: "bad_request", message: "unknown mode" } }]
            : [
                // Another conversation's change first: the reply is matched by request_id, not by order.
                { type: "mode.changed", conversation_id: "other", mode_id: "x", ts: TS },
                { type: "mode.changed", ...base, mode_id: frame.mode_id },
              ];
        case "commands.list":
          return [
            {
              type: "commands.snapshot",
              ...base,
              commands: [{ name: "compact", description: "", hint: null }],
            },
          ];
        default:
          return defaultHandler(frame, conn);
      }
    };
    client = new PhebyClient({ url: peer.url, secret: "s3cret", reconnect: false });
    await client.connect();
  });
  afterAll(async () => {
    client?.close();
    await peer?.close();
  });

  it("asks for modes in hello, and each call sends its request and resolves with its reply", async () => {
    expect(peer.connections[0]!.received[0]!.features).toContain("modes");
    const snapshot = await client.listModes("c1");
    expect(snapshot.modes.map((m) => [m.mode_id, m.auto_approves])).toEqual([
      ["default", false],
      ["yolo", true],
    ]);
    expect(snapshot.current_mode_id).toBeNull();
    expect(await client.setMode("c1", "yolo")).toMatchObject({ conversation_id: "c1", mode_id: "yolo" });
    expect(await client.listCommands("c1")).toEqual([{ name: "compact", description: "", hint: null }]);
    const sent = peer.connections[0]!.received.slice(1).map(({ request_id: _r, ...f }) => f);
    expect(sent).toEqual([
      { type: "modes.list", conversation_id: "c1" },
      { type: "mode.set", conversation_id: "c1", mode_id: "yolo" },
      { type: "commands.list", conversation_id: "c1" },
    ]);
    await expect(client.setMode("c1", "nope")).rejects.toMatchObject({ code: "bad_request" });
  });

  it("delivers mode.changed and commands.snapshot events without request_id to their handlers", async () => {
    const changed = client.next("mode.changed", (m) => m.conversation_id === "c9");
    const announced = client.next("commands.snapshot", (m) => m.conversation_id === "c9");
    peer.broadcast({ type: "mode.changed", conversation_id: "c9", mode_id: "plan", ts: TS });
    peer.broadcast({
      type: "commands.snapshot",
      conversation_id: "c9",
      commands: [{ name: "review", description: "Review the diff", hint: "[path]" }],
      ts: TS,
    });
    expect((await changed).mode_id).toBe("plan");
    expect((await announced).commands[0]).toEqual({
      name: "review",
      description: "Review the diff",
      hint: "[path]",
    });
  });
});

describe("modes: the agent's modes and slash commands", () => {
  let dataDir: string;
  let server: Awaited<ReturnType<typeof createInMemoryServer>>;
  const clients: PhebyClient[] = [];
  let conversationId: string;

  /** A connected client on the in-memory server; every frame it gets is recorded, raw and decoded. */
  async function connect(options: Partial<PhebyClientOptions> = {}) {
    const raw: string[] = [];
    const frames: ServerMessage[] = [];
    const client = new PhebyClient({
      url: server.url,
      secret: SECRET,
      WebSocket: server.WebSocket,
      reconnect: false,
      ...options,
    });
    clients.push(client);
    client.on("*", (m) => frames.push(m));
    client.onInvalidFrame((f) => raw.push(f.raw));
    await client.connect();
    return { client, frames, invalid: raw };
  }

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "pheby-client-modes-"));
    server = await createInMemoryServer({
      secret: SECRET,
      dataDir,
      agent: createSimulatorBackend({ delayMs: 1 }),
    });
  });
  afterAll(async () => {
    for (const c of clients.splice(0)) c.close();
    await server?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("is asked for by default and enabled by the server", async () => {
    expect(DEFAULT_FEATURES).toContain(FEATURE_MODES);
    const { client } = await connect();
    expect(client.features).toContain(FEATURE_MODES);
    ({ conversation_id: conversationId } = await client.request({ type: "conversation.create" }));
  });

  it("setMode: the reply to the requester, mode.changed to every other modes connection, nothing to the rest", async () => {
    const me = await connect();
    const peer = await connect();
    const v1ish = await connect({ features: DEFAULT_FEATURES.filter((f) => f !== FEATURE_MODES) });
    expect(v1ish.client.features).not.toContain(FEATURE_MODES);

    const snapshot = await me.client.listModes(conversationId);
    expect(snapshot).toMatchObject({ type: "modes.snapshot", conversation_id: conversationId });
    expect(snapshot.modes.length).toBeGreaterThan(1);
    for (const mode of snapshot.modes) {
      expect(typeof mode.mode_id).toBe("string");
      expect(typeof mode.auto_approves).toBe("boolean");
    }
    const target = snapshot.modes.find((m) => m.mode_id !== snapshot.current_mode_id && !m.auto_approves)!;
    expect(target).toBeDefined();

    const heard = peer.client.next("mode.changed", (m) => m.conversation_id === conversationId);
    const reply = await me.client.setMode(conversationId, target.mode_id);
    expect(reply).toMatchObject({
      type: "mode.changed",
      conversation_id: conversationId,
      mode_id: target.mode_id,
    });
    expect(reply.request_id).toEqual(expect.any(String));
    const event = await heard;
    expect(event.mode_id).toBe(target.mode_id);
    expect(event.request_id).toBeUndefined();
    // The requester hears it once (its reply), not a second time as a broadcast.
    await me.client.request({ type: "ping" });
    expect(me.frames.filter((f) => f.type === "mode.changed")).toHaveLength(1);

    expect((await peer.client.listModes(conversationId)).current_mode_id).toBe(target.mode_id);
    const history = await me.client.request({ type: "conversation.open", conversation_id: conversationId });
    expect(history.mode_id).toBe(target.mode_id);

    // A connection without the feature: no event, no field, and its requests are unknown.
    await v1ish.client.request({ type: "ping" });
    expect(v1ish.frames.some((f) => f.type === "mode.changed" || f.type === "commands.snapshot")).toBe(false);
    const plain = await v1ish.client.request({ type: "conversation.open", conversation_id: conversationId });
    expect("mode_id" in plain).toBe(false);
    await expect(v1ish.client.listModes(conversationId)).rejects.toMatchObject({ code: "unknown_type" });
    for (const c of [me, peer, v1ish]) expect(c.invalid).toEqual([]);
  });

  it("setMode with a mode the agent does not offer rejects with bad_request, and nothing changes", async () => {
    const { client } = await connect();
    const before = await client.listModes(conversationId);
    const err = await client.setMode(conversationId, "no-such-mode").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PhebyError);
    expect((err as PhebyError).code).toBe("bad_request");
    expect((await client.listModes(conversationId)).current_mode_id).toBe(before.current_mode_id);
  });

  it("listCommands: the simulator's /sim scenarios, each runnable as a message", async () => {
    const { client, invalid } = await connect();
    const commands = await client.listCommands(conversationId);
    expect(commands.length).toBeGreaterThan(0);
    for (const c of commands) {
      expect(Object.keys(c).sort()).toEqual(["description", "hint", "name"]);
      expect(c.name).toMatch(/^sim/);
    }
    expect(invalid).toEqual([]);
  });

  it("on an unknown conversation each call rejects with conversation_not_found", async () => {
    const { client } = await connect();
    const missing = "0".repeat(32);
    await expect(client.listModes(missing)).rejects.toMatchObject({ code: "conversation_not_found" });
    await expect(client.setMode(missing, "plan")).rejects.toMatchObject({ code: "conversation_not_found" });
    await expect(client.listCommands(missing)).rejects.toMatchObject({ code: "conversation_not_found" });
  });
});
