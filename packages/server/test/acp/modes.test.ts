/**
 * The `modes` extension with the ACP backend: a real server (in memory, real SQLite) and the scripted
 * fake agent as a real child process. Modes from the session's `modes` and from a config option of
 * category `mode`, commands announced outside any turn, `mode.set` reaching an open session at once
 * (and a closed one at its next turn), the agent's refusal in its own scrubbed words, the agent
 * leaving a mode by itself, compaction as a notice, and the choice outliving a restart.
 */
import { FEATURE_MODES, type ServerMessageOf } from "@pheby/protocol";
import { afterEach, describe, expect, it } from "vitest";
import { type AcpBackendOptions, createAcpBackend } from "../../src/agent/acp/index.js";
import { COMPACTED_NOTICE } from "../../src/settings/modes.js";
import { createConversation, RawClient, startServer, type TestServer, tempDir } from "../helpers.js";
import { FAKE_AGENT_COMMAND, fakeAgentDir } from "./harness.js";

type FakeAgent = ReturnType<typeof fakeAgentDir>;
const MODES = [FEATURE_MODES];

function agentOptions(fake: FakeAgent, env: Record<string, string>): AcpBackendOptions {
  return {
    command: FAKE_AGENT_COMMAND,
    cwd: fake.dir,
    allowedFileRoots: [fake.dir],
    respawnBackoffMs: 10,
    requestTimeoutMs: 15_000,
    env: { ...fake.env, ...env },
  };
}

describe("modes and commands of an ACP agent", () => {
  const servers: TestServer[] = [];
  const clients: RawClient[] = [];
  afterEach(async () => {
    for (const c of clients.splice(0)) c.close();
    for (const s of servers.splice(0)) await s.cleanup();
  });

  async function serve(fake: FakeAgent, env: Record<string, string>, dataDir = tempDir()) {
    const server = await startServer({
      transport: "memory",
      dataDir,
      agent: createAcpBackend(agentOptions(fake, env)),
    });
    servers.push(server);
    return server;
  }
  async function connect(server: TestServer, features?: string[]) {
    const client = await RawClient.connect(server.wsUrl, features ? { features } : {});
    clients.push(client);
    return client;
  }
  async function answer(client: RawClient, conversation_id: string, text: string): Promise<string> {
    const accepted = await client.ok({ type: "chat.send", conversation_id, text }, "run.accepted");
    const frames = await client.run(accepted.run_id, 30_000);
    const done = frames.find(
      (f) => f.type === "message.complete" && !f.kind,
    ) as ServerMessageOf<"message.complete">;
    return done.text;
  }

  it("session modes and announced commands; mode.set reaches the open session at once; a refusal in scrubbed words", async () => {
    const fake = fakeAgentDir();
    const server = await serve(fake, { FAKE_MODES: "claude", FAKE_COMMANDS: "1" });
    const a = await connect(server, MODES);
    const v1 = await connect(server);
    const announced = a.upcoming((m) => m.type === "commands.snapshot", 15_000);
    const conv = await createConversation(a);

    const listed = await a.ok({ type: "modes.list", conversation_id: conv }, "modes.snapshot");
    expect(listed.current_mode_id).toBe("default");
    expect(listed.modes).toEqual([
      { mode_id: "default", name: "default", description: "default mode", auto_approves: false },
      { mode_id: "plan", name: "plan", description: "plan mode", auto_approves: false },
      { mode_id: "acceptEdits", name: "acceptEdits", description: "acceptEdits mode", auto_approves: true },
      {
        mode_id: "bypassPermissions",
        name: "bypassPermissions",
        description: "bypassPermissions mode",
        auto_approves: true,
      },
      { mode_id: "locked", name: "locked", description: "locked mode", auto_approves: false },
    ]);

    // The commands came outside any turn, after the session: an event without request_id.
    const commands = [
      { name: "compact", description: "Compact the conversation", hint: null },
      { name: "review", description: "Review a pull request", hint: "PR number" },
    ];
    expect(await announced).toEqual({ type: "commands.snapshot", conversation_id: conv, commands });
    expect(await a.ok({ type: "commands.list", conversation_id: conv }, "commands.snapshot")).toMatchObject({
      commands,
    });

    // The session is open: the agent hears the mode now, not at the next turn.
    await a.ok({ type: "mode.set", conversation_id: conv, mode_id: "plan" }, "mode.changed");
    expect(fake.calls("session/set_mode").map((c) => c.params.modeId)).toEqual(["plan"]);
    expect(fake.calls("session/prompt")).toHaveLength(0);
    expect(await answer(a, conv, "mode")).toBe("mode=plan");

    const refused = await a.request({ type: "mode.set", conversation_id: conv, mode_id: "locked" });
    expect(refused).toMatchObject({ type: "error", error: { code: "bad_request" } });
    const words = (refused as ServerMessageOf<"error">).error.message;
    expect(words).toContain("the agent refused the mode");
    expect(words).toContain("mode locked by the policy in");
    expect(words).not.toContain(fake.dir);
    expect(
      (await a.ok({ type: "modes.list", conversation_id: conv }, "modes.snapshot")).current_mode_id,
    ).toBe("plan");

    // The agent leaves plan mode by itself: that is the conversation's mode now.
    const left = a.upcoming((m) => m.type === "mode.changed");
    expect(await answer(a, conv, "planexit")).toBe("left plan mode");
    expect(await left).toEqual({ type: "mode.changed", conversation_id: conv, mode_id: "default" });

    // A compaction is a notice for modes connections; the new command list is announced.
    const notice = a.upcoming((m) => m.type === "message.complete" && m.kind === "notice");
    const recommands = a.upcoming((m) => m.type === "commands.snapshot");
    expect(await answer(a, conv, "compact")).toBe("compacted");
    expect(await notice).toMatchObject({ conversation_id: conv, text: COMPACTED_NOTICE });
    expect(await recommands).toMatchObject({ commands: [{ name: "compact", description: "Compact again" }] });
    await v1.ok({ type: "ping" }, "pong");
    expect(v1.frames.some((f) => f.type === "message.complete" && f.kind === "notice")).toBe(false);
    expect(v1.frames.map((f) => f.type)).not.toContain("commands.snapshot");
    expect(v1.frames.map((f) => f.type)).not.toContain("mode.changed");
  }, 60_000);

  it("which modes approve without asking is decided per agent, by its agentInfo name (else the rule for unknown agents)", async () => {
    const approving = async (name: string) => {
      const fake = fakeAgentDir();
      const server = await serve(fake, { FAKE_MODES: "names", FAKE_NAME: name });
      const a = await connect(server, MODES);
      const conv = await createConversation(a);
      const listed = await a.ok({ type: "modes.list", conversation_id: conv }, "modes.snapshot");
      expect(listed.modes.map((m) => m.mode_id)).toEqual([
        "default",
        "auto",
        "dont_ask",
        "dontAsk",
        "accept_edits",
      ]);
      return listed.modes.filter((m) => m.auto_approves).map((m) => m.mode_id);
    };
    // Hermes approves edits in `dont_ask` and `accept_edits` (the same key as `dontAsk`).
    expect(await approving("hermes-agent")).toEqual(["dont_ask", "dontAsk", "accept_edits"]);
    // Claude Code's `dontAsk` denies what is not pre-approved; `accept_edits` is `acceptEdits`.
    expect(await approving("@zed-industries/claude-code-acp")).toEqual(["accept_edits"]);
    // Qwen Code's `auto` approves what its classifier deems safe.
    expect(await approving("qwen-code")).toEqual(["auto"]);
    // An agent not in the table: every mode whose name says it might approve.
    expect(await approving("fake")).toEqual(["auto", "dont_ask", "dontAsk", "accept_edits"]);
  }, 60_000);

  it("modes from a config option of category mode, switched with the config option; YOLO's mode among them", async () => {
    const fake = fakeAgentDir();
    const server = await serve(fake, { FAKE_MODES: "config" });
    const a = await connect(server, MODES);
    const conv = await createConversation(a);
    const listed = await a.ok({ type: "modes.list", conversation_id: conv }, "modes.snapshot");
    expect(listed.modes.map((m) => [m.mode_id, m.name, m.auto_approves])).toEqual([
      ["default", "DEFAULT", false],
      ["plan", "PLAN", false],
      ["yolo", "YOLO", true],
    ]);
    expect(listed.current_mode_id).toBe("default");
    await a.ok({ type: "mode.set", conversation_id: conv, mode_id: "plan" }, "mode.changed");
    const set = fake.calls("session/set_config_option").map((c) => [c.params.configId, c.params.value]);
    expect(set).toEqual([["mode", "plan"]]);
    expect(await answer(a, conv, "mode")).toBe("mode=plan");

    // YOLO's mode is the config option's yolo; YOLO off returns to plan.
    await a.ok({ type: "yolo.set", conversation_id: conv, enabled: true }, "yolo.changed");
    expect(await a.next("mode.changed", (m) => m.mode_id === "yolo")).toBeTruthy();
    expect(await answer(a, conv, "mode")).toBe("mode=yolo");
    await a.ok({ type: "yolo.set", conversation_id: conv, enabled: false }, "yolo.changed");
    expect(await a.next("mode.changed", (m) => m.mode_id === "plan")).toBeTruthy();
    expect(await answer(a, conv, "mode")).toBe("mode=plan");

    const left = a.upcoming((m) => m.type === "mode.changed");
    expect(await answer(a, conv, "planexit")).toBe("left plan mode");
    expect(await left).toMatchObject({ mode_id: "default" });
  }, 60_000);

  it("the choice outlives a restart; listing starts no agent; a closed session takes the mode at its next turn", async () => {
    const fake = fakeAgentDir();
    const dataDir = tempDir();
    const env = { FAKE_MODES: "claude" };
    const first = await startServer({
      transport: "memory",
      dataDir,
      agent: createAcpBackend(agentOptions(fake, env)),
    });
    const a = await RawClient.connect(first.wsUrl, { features: MODES });
    const conv = await createConversation(a);
    await a.ok({ type: "mode.set", conversation_id: conv, mode_id: "plan" }, "mode.changed");
    a.close();
    await first.close();
    const spawned = fake.calls("initialize").length;

    const second = await serve(fake, env, dataDir);
    const b = await connect(second, MODES);
    const listed = await b.ok({ type: "modes.list", conversation_id: conv }, "modes.snapshot");
    expect(listed.current_mode_id).toBe("plan");
    expect(listed.modes).toHaveLength(5);
    await b.ok({ type: "commands.list", conversation_id: conv }, "commands.snapshot");
    // Not open in the new agent process (none runs yet): stored now, applied with the next turn.
    await b.ok({ type: "mode.set", conversation_id: conv, mode_id: "acceptEdits" }, "mode.changed");
    expect(fake.calls("initialize")).toHaveLength(spawned);
    const before = fake.calls("session/set_mode").length;
    expect(await answer(b, conv, "mode")).toBe("mode=acceptEdits");
    expect(
      fake
        .calls("session/set_mode")
        .slice(before)
        .map((c) => c.params.modeId),
    ).toEqual(["acceptEdits"]);
  }, 60_000);
});
