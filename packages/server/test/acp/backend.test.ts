/**
 * Port-level contract tests of the ACP backend against the scripted fake agent
 * (a real child process speaking ACP over stdio).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { AcpBackendOptions } from "../../src/agent/acp/index.js";
import { createAcpBackend } from "../../src/agent/acp/index.js";
import { SESSION_REPLACED_NOTICE } from "../../src/agent/acp/replacement.js";
import type { AgentBackend } from "../../src/agent/port.js";
import {
  FAKE_AGENT_COMMAND,
  fakeAgentDir,
  NO_SETTINGS,
  RecordingHost,
  RecordingSink,
  turnInput,
} from "./harness.js";

const backends: AgentBackend[] = [];
afterEach(async () => {
  await Promise.all(backends.splice(0).map((b) => b.close()));
});

async function setup(opts: { env?: Record<string, string>; options?: Partial<AcpBackendOptions> } = {}) {
  const agent = fakeAgentDir();
  const host = new RecordingHost();
  const root = mkdtempSync(join(tmpdir(), "pheby-acp-root-"));
  const backend = createAcpBackend({
    command: FAKE_AGENT_COMMAND,
    cwd: agent.dir,
    env: { ...agent.env, ...opts.env },
    allowedFileRoots: [root],
    respawnBackoffMs: 10,
    requestTimeoutMs: 15_000,
    ...opts.options,
  });
  backends.push(backend);
  await backend.start(host);
  return { agent, host, root, backend, turn: turnInput };
}

const never = () => new AbortController().signal;

describe("ACP backend: lifecycle and runs", () => {
  it("spawns lazily, initializes with form elicitation only, streams text and hides thoughts", async () => {
    const { agent, backend, turn, host } = await setup();
    expect(agent.calls()).toEqual([]); // nothing spawned by start()
    const { sessionId } = await backend.createSession("c1");
    const init = agent.calls("initialize")[0]!.params;
    expect(init.clientCapabilities.elicitation).toEqual({ form: {} });
    // No fs or terminal: Pheby does not implement them (the SDK fills in explicit `false`s).
    expect(init.clientCapabilities.fs ?? {}).not.toMatchObject({ readTextFile: true });
    expect(init.clientCapabilities.fs ?? {}).not.toMatchObject({ writeTextFile: true });
    expect(init.clientCapabilities.terminal ?? false).toBe(false);
    expect(agent.calls("session/new")[0]!.params.cwd).toBe(agent.dir);

    const sink = new RecordingSink();
    const result = await backend.prompt(turn(sessionId, "hello there"), sink, never());
    expect(result).toEqual({ status: "completed" });
    expect(sink.answer).toBe("echo: hello there");
    expect(sink.of("text").length).toBeGreaterThan(1); // streamed, not one blob
    expect(sink.answer).not.toContain("secret thoughts");
    // stderr goes to debug logs only, as its length (chat content: the host did not allow it verbatim)
    const stderr = host.logs.filter((l) => l.msg === "agent stderr");
    expect(stderr.length).toBeGreaterThan(0);
    expect(stderr.every((l) => l.level === "debug" && "agentStderrChars" in l.obj)).toBe(true);
    expect(JSON.stringify(host.logs)).not.toContain("fake agent started");
    expect(backend.capabilities).toMatchObject({
      listSessions: true,
      loadHistory: true,
      deleteSession: true,
      images: true,
    });
  });

  it.each([
    ["end_turn", { status: "completed" }],
    ["max_tokens", { status: "completed" }],
    ["max_turn_requests", { status: "completed" }],
    ["cancelled", { status: "cancelled" }],
    ["refusal", { status: "failed", error: "the agent refused to continue" }],
  ])("maps stopReason %s", async (reason, expected) => {
    const { backend, turn } = await setup();
    const { sessionId } = await backend.createSession("c1");
    expect(await backend.prompt(turn(sessionId, `stop ${reason}`), new RecordingSink(), never())).toEqual(
      expected,
    );
  });

  it("turns a JSON-RPC error into a failed run and keeps the agent usable", async () => {
    const { backend, turn } = await setup();
    const { sessionId } = await backend.createSession("c1");
    const result = await backend.prompt(turn(sessionId, "error"), new RecordingSink(), never());
    expect(result).toEqual({ status: "failed", error: "the agent reported an error: scripted failure" });
    expect(await backend.prompt(turn(sessionId, "again"), new RecordingSink(), never())).toEqual({
      status: "completed",
    });
  });

  it("fails the active run when the agent crashes, withdraws nothing it does not own, and respawns + resumes", async () => {
    const { agent, backend, turn, host } = await setup();
    const { sessionId } = await backend.createSession("c1");
    const sink = new RecordingSink();
    const result = await backend.prompt(turn(sessionId, "crash"), sink, never());
    expect(result).toEqual({
      status: "failed",
      error: "the agent process exited unexpectedly (exit code 3)",
    });
    expect(host.logs.some((l) => l.level === "warn" && l.msg === "agent process exited")).toBe(true);
    // The next request respawns and resumes the session the new process has not seen.
    const again = new RecordingSink();
    expect(await backend.prompt(turn(sessionId, "hi"), again, never())).toEqual({ status: "completed" });
    expect(again.answer).toBe("echo: hi");
    expect(agent.calls("initialize")).toHaveLength(2);
    expect(agent.calls("session/resume").map((c) => c.params.sessionId)).toEqual([sessionId]);
  });

  it("withdraws a pending approval when the agent crashes", async () => {
    const { backend, turn } = await setup();
    const { sessionId } = await backend.createSession("c1");
    const sink = new RecordingSink({
      permission: async () => {
        // Kill the agent while the question is pending, the way a crash would.
        (backend as unknown as { proc: { kill(r: string): void } }).proc.kill("simulated crash");
        return new Promise(() => {});
      },
    });
    const result = await backend.prompt(turn(sessionId, "permission hermes"), sink, never());
    expect(result).toEqual({ status: "failed", error: "simulated crash" });
    expect(sink.withdrawn).toEqual(["permission"]);
    expect(sink.of("toolEnd")).toEqual([
      { type: "toolEnd", toolCallId: "p1", status: "failed", error: "simulated crash" },
    ]);
  });

  it("treats an unanswered control request as a hang: kills the agent and fails clearly", async () => {
    const { backend } = await setup({
      env: { FAKE_HANG: "session/new" },
      options: { requestTimeoutMs: 1000 },
    });
    await expect(backend.createSession("c1")).rejects.toThrow(
      "the agent stopped responding (no answer to session/new within 1000 ms)",
    );
    // The hung process was killed; the next request gets a fresh one.
    expect(backend.capabilities.listSessions).toBe(true);
  });

  it("cancels: session/cancel, pending permission answered cancelled, run ends cancelled", async () => {
    const { agent, backend, turn } = await setup();
    const { sessionId } = await backend.createSession("c1");
    const ctl = new AbortController();
    const sink = new RecordingSink({
      permission: async () => {
        ctl.abort();
        return new Promise(() => {});
      },
    });
    const result = await backend.prompt(turn(sessionId, "permission hermes"), sink, ctl.signal);
    expect(result).toEqual({ status: "cancelled" });
    expect(agent.calls("session/cancel")).toHaveLength(1);
    expect(sink.withdrawn).toEqual(["permission"]);
    // The agent saw the `cancelled` outcome.
    expect(sink.answer).toBe("cancelled");
  });

  it("cancels a streaming run", async () => {
    const { backend, turn } = await setup();
    const { sessionId } = await backend.createSession("c1");
    const ctl = new AbortController();
    const sink = new RecordingSink();
    const origText = sink.text.bind(sink);
    sink.text = (chunk: string) => {
      origText(chunk);
      if (sink.of("text").length === 3) ctl.abort();
    };
    expect(await backend.prompt(turn(sessionId, "slow"), sink, ctl.signal)).toEqual({ status: "cancelled" });
    expect(sink.answer).toContain("tick 0");
  });

  it("kills an agent that ignores a cancel and still ends the run cancelled; the next run respawns", async () => {
    const { agent, backend, turn } = await setup({ options: { cancelTimeoutMs: 200 } });
    const { sessionId } = await backend.createSession("c1");
    const ctl = new AbortController();
    const sink = new RecordingSink();
    sink.text = () => ctl.abort();
    expect(await backend.prompt(turn(sessionId, "hang"), sink, ctl.signal)).toEqual({ status: "cancelled" });
    expect(await backend.prompt(turn(sessionId, "hi"), new RecordingSink(), never())).toEqual({
      status: "completed",
    });
    expect(agent.calls("initialize")).toHaveLength(2);
  });

  it("a prompt sent while a cancelled turn is still stopping waits, and runs on the respawned agent if that one is killed", async () => {
    const { agent, backend, turn } = await setup({ options: { cancelTimeoutMs: 500 } });
    const { sessionId } = await backend.createSession("c1");
    const ctl = new AbortController();
    const sink = new RecordingSink();
    sink.text = () => ctl.abort();
    const first = backend.prompt(turn(sessionId, "hang"), sink, ctl.signal);
    await new Promise<void>((resolve) => ctl.signal.addEventListener("abort", () => resolve()));
    // Sent before the hung agent is killed (Claude Code stops only when the model's stream ends).
    const next = await backend.prompt(turn(sessionId, "hi"), new RecordingSink(), never());
    expect(await first).toEqual({ status: "cancelled" });
    expect(next).toEqual({ status: "completed" }); // before: the killed process's error
    expect(agent.calls("initialize")).toHaveLength(2);
  });

  it("a cancel while the session is still being reopened (a hung session/load) is given up too; the next prompt is not refused", async () => {
    const caps = JSON.stringify({ loadSession: true, sessionCapabilities: {} });
    const first = await setup({ env: { FAKE_CAPS: caps } });
    const { sessionId } = await first.backend.createSession("c1");
    await first.backend.close();
    const hangFile = join(first.agent.dir, "hang-load");
    const { agent } = first; // its state and call log, which the restarted backend's agent shares
    const { backend, turn } = await setup({
      env: { ...agent.env, FAKE_CAPS: caps, FAKE_HANG: "session/load", FAKE_HANG_WHILE: hangFile },
      options: { cwd: first.agent.dir, cancelTimeoutMs: 300 },
    });
    writeFileSync(hangFile, "");
    const ctl = new AbortController();
    const stuck = backend.prompt(turn(sessionId, "one"), new RecordingSink(), ctl.signal);
    while (agent.calls("session/load").length === 0) await new Promise((r) => setTimeout(r, 10));
    ctl.abort();
    rmSync(hangFile);
    // What the engine does after its grace: the next message, while the old turn has not ended.
    // Before: "a turn is already running in this session" (the cancel went unseen until session/prompt).
    const next = backend.prompt(turn(sessionId, "two"), new RecordingSink(), never());
    expect(await stuck).toEqual({ status: "cancelled" });
    expect(await next).toEqual({ status: "completed" });
    // One process for the first backend, then the one holding the hung load, restarted: three.
    expect(agent.calls("initialize")).toHaveLength(3);
  });

  it("fails runs with a clear error when the agent cannot start, and retries on the next request", async () => {
    const { backend, turn, agent } = await setup({ env: { FAKE_EXIT_AT_START: "1" } });
    const first = await backend.prompt(turn("s", "hi"), new RecordingSink(), never());
    expect(first.status).toBe("failed");
    expect(first.status === "failed" && first.error).toMatch(
      /the agent (failed to initialize|process exited unexpectedly)/,
    );
    await expect(backend.createSession("c1")).rejects.toThrow(/agent/);
    expect(agent.calls("exit-at-start")).toHaveLength(2);
  });

  it("fails clearly when the command does not exist", async () => {
    const { backend } = await setup({ options: { command: ["/nonexistent/agent-binary"] } });
    await expect(backend.createSession("c1")).rejects.toThrow(/could not be started.*ENOENT/);
  });

  it("shuts the agent down on close", async () => {
    const { backend, turn } = await setup();
    const { sessionId } = await backend.createSession("c1");
    const pid = (backend as unknown as { proc: { child: { pid: number } } }).proc.child.pid;
    await backend.close();
    expect(() => process.kill(pid, 0)).toThrow();
    expect((await backend.prompt(turn(sessionId, "hi"), new RecordingSink(), never())).status).toBe("failed");
  });
});

describe("ACP backend: tools and decisions", () => {
  it("maps tool calls to start/end with raw input as args, truncated failures, no results", async () => {
    const { backend, turn } = await setup();
    const { sessionId } = await backend.createSession("c1");
    const sink = new RecordingSink();
    expect(await backend.prompt(turn(sessionId, "tools"), sink, never())).toEqual({ status: "completed" });
    const tools = sink.events.filter((e) => e.type === "toolStart" || e.type === "toolEnd");
    expect(tools[0]).toEqual({
      type: "toolStart",
      toolCallId: "t1",
      toolName: "List files",
      args: { command: "ls", api_key: "sk-123" },
    });
    expect(tools[1]).toEqual({ type: "toolEnd", toolCallId: "t1", status: "completed" });
    expect(tools[2]).toEqual({ type: "toolStart", toolCallId: "t2", toolName: "read_file", args: undefined });
    expect(tools[3]).toMatchObject({ type: "toolEnd", toolCallId: "t2", status: "failed" });
    const error = (tools[3] as { error: string }).error;
    expect(error.startsWith("boom ")).toBe(true);
    expect(error.length).toBeLessThanOrEqual(301);
    // A tool still open at the end of a completed turn is closed.
    expect(tools[5]).toEqual({ type: "toolEnd", toolCallId: "t3", status: "completed" });
    expect(JSON.stringify(sink.events)).not.toContain("/home/secret");
  });

  it.each([
    ["hermes", ["once", "session", "always", "deny"], "session", "chose allow_session"],
    ["hermes", ["once", "session", "always", "deny"], "deny", "chose deny"],
    ["hermes", ["once", "session", "always", "deny"], "always", "chose allow_always"],
    ["generic", ["once", "always", "deny"], "once", "chose proceed_once"],
    ["generic", ["once", "always", "deny"], "deny", "chose cancel"],
  ] as const)("maps %s permission options (%j), answering %s", async (set, choices, choice, said) => {
    const { backend, turn } = await setup();
    const { sessionId } = await backend.createSession("c1");
    const sink = new RecordingSink({ permission: async () => ({ outcome: "selected", choice }) });
    expect(await backend.prompt(turn(sessionId, `permission ${set}`), sink, never())).toEqual({
      status: "completed",
    });
    const [asked] = sink.of("permission");
    expect(asked!.question).toEqual({
      toolCallId: "p1",
      command: "rm -rf build",
      description: "Destructive shell command",
      choices,
    });
    // The tool call is reported before the question about it.
    expect(sink.events.findIndex((e) => e.type === "toolStart")).toBeLessThan(
      sink.events.findIndex((e) => e.type === "permission"),
    );
    expect(sink.answer).toBe(said);
  });

  it("withdraws a permission question the agent cancels", async () => {
    const { backend, turn } = await setup();
    const { sessionId } = await backend.createSession("c1");
    const sink = new RecordingSink();
    expect(await backend.prompt(turn(sessionId, "permission hermes withdraw"), sink, never())).toEqual({
      status: "completed",
    });
    expect(sink.withdrawn).toEqual(["permission"]);
  });

  it("maps a Hermes clarify form: choices, Other as free text, and the answer back", async () => {
    const { backend, turn } = await setup();
    const { sessionId } = await backend.createSession("c1");
    const pick = new RecordingSink({
      clarify: async () => ({ outcome: "answered", response: "production" }),
    });
    await backend.prompt(turn(sessionId, "clarify"), pick, never());
    expect(pick.of("clarify")[0]!.question).toEqual({
      question: "Need input\nDeploy where?",
      choices: ["staging", "production"],
      allowFreeText: true,
    });
    expect(pick.answer).toBe('elicitation: {"action":"accept","content":{"answer":"production"}}');

    const free = new RecordingSink({ clarify: async () => ({ outcome: "answered", response: "canary" }) });
    await backend.prompt(turn(sessionId, "clarify"), free, never());
    expect(free.answer).toBe(
      'elicitation: {"action":"accept","content":{"answer":"Other (type your answer)","other_answer":"canary"}}',
    );

    const cancelled = new RecordingSink({ clarify: async () => ({ outcome: "cancelled" }) });
    await backend.prompt(turn(sessionId, "clarify"), cancelled, never());
    expect(cancelled.answer).toBe('elicitation: {"action":"cancel"}');
  });

  it("maps a free-text form", async () => {
    const { backend, turn } = await setup();
    const { sessionId } = await backend.createSession("c1");
    const sink = new RecordingSink({ clarify: async () => ({ outcome: "answered", response: "Ada" }) });
    await backend.prompt(turn(sessionId, "clarify free"), sink, never());
    expect(sink.of("clarify")[0]!.question).toEqual({
      question: "Need input\nYour name?",
      choices: null,
      allowFreeText: true,
    });
    expect(sink.answer).toBe('elicitation: {"action":"accept","content":{"answer":"Ada"}}');
  });
});

describe("ACP backend: models, reasoning and modes", () => {
  it("builds the catalogue from config options and applies only changed settings", async () => {
    const { agent, backend, turn } = await setup({ options: { mode: "default" } });
    const catalogue = await backend.catalogue!();
    expect(catalogue).toEqual({
      providers: [
        { slug: "cloud", name: "Cloud", models: ["big", "small"] },
        { slug: "local", name: "Local", models: ["tiny"] },
      ],
      defaultModel: { model: "small", provider: "cloud" },
      reasoningEfforts: ["none", "low", "medium", "high"],
      defaultEffort: "medium",
      modelEfforts: { small: ["none", "low", "medium", "high"] },
    });
    expect(backend.capabilities).toMatchObject({ models: true, reasoning: true });
    // The probe session is hidden from the list.
    expect(await backend.listSessions!()).toEqual([]);

    const { sessionId } = await backend.createSession("c1");
    const settings = { model: { model: "big", provider: "cloud" }, effort: "none" as const, yolo: false };
    const sink = new RecordingSink();
    await backend.prompt(turn(sessionId, "whoami", { settings }), sink, never());
    expect(sink.answer).toMatch(/^model=big effort=off mode=default/);
    const sets = agent.calls("session/set_config_option").map((c) => [c.params.configId, c.params.value]);
    expect(sets).toEqual([
      ["model", "big"],
      ["reasoning", "off"],
    ]);
    // Same settings again: nothing is sent.
    await backend.prompt(turn(sessionId, "whoami", { settings }), new RecordingSink(), never());
    expect(agent.calls("session/set_config_option")).toHaveLength(2);
  });

  it("falls back to the legacy models API", async () => {
    const { agent, backend, turn } = await setup({ env: { FAKE_MODELS: "legacy" } });
    const { sessionId } = await backend.createSession("c1");
    const catalogue = await backend.catalogue!();
    expect(catalogue.providers).toEqual([{ slug: "fake", name: "fake", models: ["m-one", "m-two"] }]);
    expect(catalogue.defaultModel).toEqual({ model: "m-one", provider: "fake" });
    expect(backend.capabilities).toMatchObject({ models: true, reasoning: false });
    const sink = new RecordingSink();
    const settings = { model: { model: "m-two", provider: "fake" }, effort: null, yolo: false };
    await backend.prompt(turn(sessionId, "whoami", { settings }), sink, never());
    expect(sink.answer).toMatch(/^model=m-two /);
    expect(agent.calls("session/set_model").map((c) => c.params)).toEqual([{ sessionId, modelId: "m-two" }]);
  });

  it("reports no model support when the agent has none", async () => {
    const { backend } = await setup({ env: { FAKE_MODELS: "none" } });
    await backend.createSession("c1");
    expect(backend.capabilities).toMatchObject({ models: false, reasoning: false });
  });

  it("switches to the agent's yolo mode while YOLO is on, and back after", async () => {
    const { backend, turn } = await setup({ options: { mode: "default" } });
    const { sessionId } = await backend.createSession("c1");
    const on = new RecordingSink();
    await backend.prompt(
      turn(sessionId, "whoami", { settings: { ...NO_SETTINGS, yolo: true } }),
      on,
      never(),
    );
    expect(on.answer).toContain("mode=yolo");
    const off = new RecordingSink();
    await backend.prompt(turn(sessionId, "whoami"), off, never());
    expect(off.answer).toContain("mode=default");
  });
});

describe("ACP backend: sessions", () => {
  it("lists sessions across pages, replays history, resumes after a restart, deletes", async () => {
    const { agent, backend, turn, host } = await setup();
    const a = await backend.createSession("c1");
    const b = await backend.createSession("c2");
    const c = await backend.createSession("c3");
    await backend.prompt(turn(a.sessionId, "first question"), new RecordingSink(), never());
    await backend.prompt(turn(a.sessionId, "title"), new RecordingSink(), never());
    expect(host.titles).toEqual([{ sessionId: a.sessionId, title: "Scripted title" }]);

    const list = await backend.listSessions!();
    expect(list.map((s) => s.sessionId)).toEqual([a.sessionId, b.sessionId, c.sessionId]);
    expect(list[0]).toEqual({
      sessionId: a.sessionId,
      title: "Scripted title",
      updatedAt: "2026-01-01T00:00:00Z",
      cwd: agent.dir, // the directory it was listed under (session/list's cwd filter)
    });
    expect(agent.calls("session/list").length).toBe(2); // followed the cursor

    const history = await backend.loadHistory!(a.sessionId);
    expect(history).toEqual([
      { role: "user", text: "first question" },
      { role: "assistant", text: "echo: first question" },
      { role: "user", text: "title" },
      { role: "assistant", text: "titled" },
    ]);

    // A new backend (a Pheby restart) resumes the session before prompting it.
    await backend.close();
    const { backend: restarted } = await setup({ env: agent.env, options: { cwd: agent.dir } });
    const sink = new RecordingSink();
    expect(await restarted.prompt(turn(a.sessionId, "after restart"), sink, never())).toEqual({
      status: "completed",
    });
    expect(agent.calls("session/resume").map((x) => x.params.sessionId)).toEqual([a.sessionId]);

    await restarted.deleteSession!(b.sessionId);
    expect(agent.calls("session/close").map((x) => x.params.sessionId)).toContain(b.sessionId);
    expect(agent.calls("session/delete").map((x) => x.params.sessionId)).toEqual([b.sessionId]);
    expect((await restarted.listSessions!()).map((s) => s.sessionId)).toEqual([a.sessionId, c.sessionId]);
  });

  it("loads instead of resuming when only session/load is advertised, without leaking the replay", async () => {
    const caps = JSON.stringify({ sessionCapabilities: {} });
    const { agent, backend, turn } = await setup({ env: { FAKE_CAPS: caps } });
    const { sessionId } = await backend.createSession("c1");
    await backend.prompt(turn(sessionId, "one"), new RecordingSink(), never());
    expect(backend.capabilities).toMatchObject({
      listSessions: false,
      deleteSession: false,
      loadHistory: true,
    });
    expect(await backend.listSessions!()).toEqual([]);
    await expect(backend.deleteSession!(sessionId)).rejects.toThrow(/cannot close or delete/);
    await backend.close();

    const { backend: restarted } = await setup({
      env: { ...agent.env, FAKE_CAPS: caps },
      options: { cwd: agent.dir },
    });
    const sink = new RecordingSink();
    expect(await restarted.prompt(turn(sessionId, "two"), sink, never())).toEqual({ status: "completed" });
    expect(agent.calls("session/load")).toHaveLength(1);
    expect(sink.answer).toBe("echo: two"); // the replayed "echo: one" is not part of this turn
  });

  /** A session made by an agent that can neither resume nor load, and a backend restarted since. */
  async function restartedWithoutReopen() {
    const caps = JSON.stringify({ loadSession: false, sessionCapabilities: {} });
    const { agent, backend, turn } = await setup({ env: { FAKE_CAPS: caps } });
    const { sessionId } = await backend.createSession("c1");
    await backend.close();
    const { backend: restarted } = await setup({
      env: { ...agent.env, FAKE_CAPS: caps },
      options: { cwd: agent.dir },
    });
    return { agent, turn, sessionId, restarted };
  }

  it("continues in a new session when the agent can neither resume nor load: the transcript as context, a notice", async () => {
    const { agent, turn, sessionId, restarted } = await restartedWithoutReopen();
    // Without a new session the conversation failed forever: "the agent cannot reopen this conversation
    // after a restart".
    const sink = new RecordingSink();
    const history = () => ({
      entries: [
        { role: "user" as const, text: "my name is Ada" },
        { role: "assistant" as const, text: "hello Ada" },
      ],
      more: false,
    });
    expect(await restarted.prompt(turn(sessionId, "hi", { history }), sink, never())).toEqual({
      status: "completed",
    });
    expect(sink.answer).toBe("echo: hi");
    const [replaced] = sink.of("sessionReplaced");
    expect(replaced?.sessionId).toMatch(/^sess-/);
    expect(replaced?.sessionId).not.toBe(sessionId);
    expect(sink.of("notice").map((n) => n.text)).toEqual([SESSION_REPLACED_NOTICE]);
    const prompt = agent.calls("session/prompt").at(-1)!.params;
    expect(prompt.sessionId).toBe(replaced?.sessionId);
    expect(prompt.prompt[0].text).toMatch(/^<conversation_so_far source="pheby">/);
    expect(prompt.prompt[0].text).toContain("User: my name is Ada\n\nAssistant: hello Ada");
    expect(prompt.prompt[1]).toEqual({ type: "text", text: "hi" });
    // The new session is open now: the next turn runs in it, with no context and no notice.
    const next = new RecordingSink();
    expect(await restarted.prompt(turn(replaced!.sessionId, "again", { history }), next, never())).toEqual({
      status: "completed",
    });
    expect(next.of("sessionReplaced")).toEqual([]);
    expect(agent.calls("session/prompt").at(-1)!.params.prompt).toHaveLength(1);
    await expect(restarted.loadHistory!(sessionId)).rejects.toThrow(/cannot replay/);
  });

  it("a conversation where nothing was said yet moves to a new session without a notice", async () => {
    const { turn, sessionId, restarted } = await restartedWithoutReopen();
    const sink = new RecordingSink();
    const empty = () => ({ entries: [], more: false });
    expect(await restarted.prompt(turn(sessionId, "first", { history: empty }), sink, never())).toEqual({
      status: "completed",
    });
    expect(sink.of("sessionReplaced")).toHaveLength(1);
    expect(sink.of("notice")).toEqual([]);
  });

  it("pushes output outside a turn as one unsolicited message, and notices", async () => {
    const { backend, turn, host } = await setup({ options: { unsolicitedFlushMs: 50 } });
    const { sessionId } = await backend.createSession("c1");
    const next = host.nextUnsolicited();
    const sink = new RecordingSink();
    await backend.prompt(turn(sessionId, "later"), sink, never());
    expect(sink.answer).toBe("see you later");
    await next;
    expect(host.unsolicitedMessages).toEqual([{ sessionId, text: "background result" }]);

    const noticed = new RecordingSink();
    await backend.prompt(turn(sessionId, "notice"), noticed, never());
    expect(noticed.of("notice")).toEqual([{ type: "notice", text: "Heads up: context compacted" }]);
  });
});

describe("ACP backend: files", () => {
  it("sends attachments as image, embedded resource and resource_link blocks", async () => {
    const { agent, backend, turn, root } = await setup();
    const { sessionId } = await backend.createSession("c1");
    const png = join(root, "a.png");
    writeFileSync(png, Buffer.from([0x89, 0x50, 0x4e, 0x47]));
    const pdf = join(root, "b.pdf");
    writeFileSync(pdf, "%PDF-1.4");
    const notes = join(root, "c.md");
    writeFileSync(notes, "# notes");
    const attachments = [
      {
        attachmentId: "1",
        filename: "a.png",
        mimeType: "image/png",
        size: 4,
        kind: "image" as const,
        path: png,
      },
      {
        attachmentId: "2",
        filename: "b.pdf",
        mimeType: "application/pdf",
        size: 8,
        kind: "document" as const,
        path: pdf,
      },
      {
        attachmentId: "3",
        filename: "c.md",
        mimeType: "text/markdown",
        size: 7,
        kind: "document" as const,
        path: notes,
        inlineText: "# notes",
      },
    ];
    const sink = new RecordingSink();
    await backend.prompt(turn(sessionId, "whoami", { attachments }), sink, never());
    expect(sink.answer).toContain("blocks=text,image,resource_link,resource(# notes)");
    const prompt = agent.calls("session/prompt")[0]!.params.prompt;
    expect(prompt[1]).toMatchObject({
      type: "image",
      mimeType: "image/png",
      data: Buffer.from([0x89, 0x50, 0x4e, 0x47]).toString("base64"),
    });
    expect(prompt[2]).toMatchObject({ type: "resource_link", uri: `file://${pdf}`, name: "b.pdf" });
  });

  it("falls back to links and inline text when the agent declares no image or embedded context", async () => {
    const caps = JSON.stringify({ promptCapabilities: {} });
    const { agent, backend, turn, root } = await setup({ env: { FAKE_CAPS: caps } });
    const { sessionId } = await backend.createSession("c1");
    const png = join(root, "a.png");
    writeFileSync(png, "x");
    const attachments = [
      {
        attachmentId: "1",
        filename: "a.png",
        mimeType: "image/png",
        size: 1,
        kind: "image" as const,
        path: png,
      },
      {
        attachmentId: "3",
        filename: "c.md",
        mimeType: "text/markdown",
        size: 7,
        kind: "document" as const,
        path: png,
        inlineText: "# notes",
      },
    ];
    await backend.prompt(turn(sessionId, "whoami", { attachments }), new RecordingSink(), never());
    const prompt = agent.calls("session/prompt")[0]!.params.prompt;
    expect(prompt.map((b: { type: string }) => b.type)).toEqual(["text", "resource_link", "text"]);
    expect(prompt[2].text).toContain("# notes");
    expect(backend.capabilities.images).toBe(false);
  });

  it("delivers image and resource blocks as files", async () => {
    const { backend, turn } = await setup();
    const { sessionId } = await backend.createSession("c1");
    const sink = new RecordingSink();
    await backend.prompt(turn(sessionId, "files"), sink, never());
    const files = sink.of("file").map((f) => f.file);
    expect(files).toHaveLength(2);
    expect(files[0]).toMatchObject({ source: "bytes", filename: "image.png", mimeType: "image/png" });
    expect(files[1]).toMatchObject({ source: "bytes", filename: "report.md", mimeType: "text/markdown" });
    expect(Buffer.from((files[1] as { bytes: Uint8Array }).bytes).toString()).toBe("# Report");
  });

  it("turns MEDIA: lines inside the allowed roots into files, refuses others, strips every tag", async () => {
    const { backend, turn, root, host } = await setup();
    const { sessionId } = await backend.createSession("c1");
    const inside = join(root, "chart.png");
    writeFileSync(inside, "png");
    const outsideDir = mkdtempSync(join(tmpdir(), "pheby-outside-"));
    const outside = join(outsideDir, "passwd");
    writeFileSync(outside, "secret");
    // A symlink inside the root that points outside must be refused too.
    mkdirSync(join(root, "sub"));
    const link = join(root, "sub", "link");
    symlinkSync(outside, link);
    const sink = new RecordingSink();
    await backend.prompt(turn(sessionId, `media ${inside} ${outside} ${link}`), sink, never());
    expect(sink.answer).toBe("Result:\nDone. MEDIA:not-a-line");
    expect(sink.of("file").map((f) => f.file)).toEqual([{ source: "path", path: inside }]);
    expect(host.logs.filter((l) => l.msg === "refused an agent file outside the allowed roots")).toHaveLength(
      2,
    );
  });
});

describe("ACP backend: other agents' behaviour (OpenCode, Codex, Gemini CLI, Claude Code)", () => {
  const opencode = { env: { FAKE_MODELS: "opencode" } };
  const want = (model: string, effort: "high" | "low" | null) => ({
    settings: { model: { model, provider: null }, effort, yolo: false },
  });

  it("applies the effort after the model switch, from the options the new model offers (OpenCode)", async () => {
    const { agent, backend, turn } = await setup(opencode);
    const { sessionId } = await backend.createSession("c1");
    const sink = new RecordingSink();
    await backend.prompt(turn(sessionId, "whoami", want("thinker", "high")), sink, never());
    expect(sink.answer).toMatch(/^model=thinker effort=high /);
    expect(sink.of("notice")).toEqual([]);
    const sets = () =>
      agent.calls("session/set_config_option").map((c) => [c.params.configId, c.params.value]);
    expect(sets()).toEqual([
      ["model", "thinker"],
      ["effort", "high"],
    ]);
    // The catalogue now knows which efforts each model has.
    expect((await backend.catalogue!()).modelEfforts).toEqual({
      fast: [],
      thinker: ["low", "medium", "high"],
    });
  });

  it("drops an effort the new model lacks, says so in a notice, and the run completes (OpenCode)", async () => {
    const { agent, backend, turn } = await setup(opencode);
    const { sessionId } = await backend.createSession("c1");
    await backend.prompt(turn(sessionId, "whoami", want("thinker", "high")), new RecordingSink(), never());
    const sink = new RecordingSink();
    const result = await backend.prompt(turn(sessionId, "whoami", want("fast", "high")), sink, never());
    expect(result).toEqual({ status: "completed" });
    expect(sink.answer).toMatch(/^model=fast effort=default /);
    expect(sink.of("notice").map((n) => n.text)).toEqual([
      "Setting skipped: reasoning effort high is not offered with the model fast; this turn uses the agent's current setting.",
    ]);
    expect(agent.calls("session/set_config_option").map((c) => c.params.configId)).toEqual([
      "model",
      "effort",
      "model",
    ]);
  });

  it("keeps the catalogue's probe session for the next conversation and hides it through the host", async () => {
    const { agent, backend, host } = await setup(opencode);
    await backend.catalogue!();
    const probe = agent.calls("session/new");
    expect(probe).toHaveLength(1);
    expect(await backend.listSessions!()).toEqual([]);
    const { sessionId } = await backend.createSession("c1");
    // The probe became the conversation's session: no empty session is left behind…
    expect(agent.calls("session/new")).toHaveLength(1);
    expect(host.hidden).toEqual([sessionId]);
    // …and the next conversation gets a new one.
    const second = await backend.createSession("c2");
    expect(second.sessionId).not.toBe(sessionId);
    expect(agent.calls("session/close")).toEqual([]);
  });

  it("merges late tool arguments and repeats running with them (OpenCode: {cwd} first, the command in an update)", async () => {
    const { backend, turn } = await setup();
    const { sessionId } = await backend.createSession("c1");
    const sink = new RecordingSink();
    await backend.prompt(turn(sessionId, "opencodeTool"), sink, never());
    const tools = sink.events.filter((e) => e.type === "toolStart" || e.type === "toolEnd");
    expect(tools).toEqual([
      { type: "toolStart", toolCallId: "oc1", toolName: "bash", args: { cwd: "/work" } },
      {
        type: "toolStart",
        toolCallId: "oc1",
        toolName: "bash", // not the later title, which is the command itself
        args: { cwd: "/work", command: "ls -la", description: "List files", token: "t-secret" },
      },
      { type: "toolEnd", toolCallId: "oc1", status: "completed" },
    ]);
  });

  it("takes the tool name from _meta and the input from a repeated tool_call (Claude Code)", async () => {
    const { backend, turn } = await setup();
    const { sessionId } = await backend.createSession("c1");
    const sink = new RecordingSink();
    await backend.prompt(turn(sessionId, "claudeTool"), sink, never());
    const tools = sink.events.filter((e) => e.type === "toolStart" || e.type === "toolEnd");
    expect(tools).toEqual([
      { type: "toolStart", toolCallId: "cc1", toolName: "Bash", args: {} },
      {
        type: "toolStart",
        toolCallId: "cc1",
        toolName: "Bash",
        args: { command: "ls -la", description: "List files" },
      },
      { type: "toolEnd", toolCallId: "cc1", status: "completed" },
    ]);
  });

  it("names a tool by its call ID's prefix, not by a title that is the command (Gemini CLI)", async () => {
    const { backend, turn } = await setup();
    const { sessionId } = await backend.createSession("c1");
    const sink = new RecordingSink();
    await backend.prompt(turn(sessionId, "geminiTool"), sink, never());
    expect(sink.of("toolStart").map((t) => t.toolName)).toEqual(["run_shell_command"]);
  });

  it("keeps the agent's own error text behind a bare 'Internal error', redacted and truncated (Gemini CLI)", async () => {
    const { backend, turn } = await setup();
    const { sessionId } = await backend.createSession("c1");
    const result = await backend.prompt(turn(sessionId, "internal"), new RecordingSink(), never());
    expect(result.status).toBe("failed");
    const error = (result as { error: string }).error;
    expect(error).toMatch(
      /^the agent reported an error: Quota exceeded for api_key=\[REDACTED\], retry later x+…$/,
    );
    expect(error).not.toContain("sk-live");
    expect(error.length).toBeLessThanOrEqual("the agent reported an error: ".length + 300);
  });

  it.each([
    // [agent options, client choice, option the agent receives]
    ["gemini", "once", "proceed_once"],
    ["gemini", "session", "proceed_always"], // "Allow for this session" (kind allow_always)
    ["gemini", "always", "proceed_always_and_save"],
    ["gemini", "deny", "cancel"],
    ["generic", "session", "proceed_once"], // no session grant: the narrower allow
    ["generic", "always", "proceed_always"],
    ["hermes", "deny", "deny"], // reject_once before reject_always
    ["always", "once", "yes_forever"], // no narrower allow offered
    ["always", "session", "yes_forever"],
    ["always", "deny", "no_forever"],
  ])("with %s options, the client's %s reaches the agent as %s", async (options, choice, optionId) => {
    const { backend, turn } = await setup();
    const { sessionId } = await backend.createSession("c1");
    const sink = new RecordingSink({
      permission: async () => ({ outcome: "selected", choice: choice as "once" }),
    });
    await backend.prompt(turn(sessionId, `permission ${options}`), sink, never());
    expect(sink.answer).toBe(`chose ${optionId}`);
  });

  it("shows the choices each option set really offers", async () => {
    const { backend, turn } = await setup();
    const { sessionId } = await backend.createSession("c1");
    const offered: Record<string, string[]> = {};
    for (const options of ["gemini", "generic", "always", "hermes"]) {
      const sink = new RecordingSink({ permission: async () => ({ outcome: "selected", choice: "deny" }) });
      await backend.prompt(turn(sessionId, `permission ${options}`), sink, never());
      offered[options] = sink.of("permission")[0]!.question.choices;
    }
    expect(offered).toEqual({
      gemini: ["once", "session", "always", "deny"],
      generic: ["once", "always", "deny"],
      always: ["always", "deny"],
      hermes: ["once", "session", "always", "deny"],
    });
  });
});

describe("ACP backend: agents launched through a shim (npx, node_modules/.bin)", () => {
  const shim = fileURLToPath(new URL("./shim.mjs", import.meta.url));
  /** Running (a killed orphan may stay a zombie here: this container's PID 1 does not reap). */
  const alive = (pid: number) => {
    try {
      return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
    } catch {
      return false;
    }
  };
  async function shimmed(env: Record<string, string> = {}) {
    const pids = join(mkdtempSync(join(tmpdir(), "pheby-shim-")), "pids");
    const s = await setup({
      env: { FAKE_LINGER: "1", FAKE_PIDS: pids, ...env },
      options: { command: [process.execPath, shim, ...FAKE_AGENT_COMMAND], shutdownTimeoutMs: 2_000 },
    });
    const agentPid = async () => Number((await readFile(pids, "utf8")).trim());
    return { ...s, agentPid };
  }

  it("close() ends the agent behind the shim too, within the shutdown timeout", async () => {
    const { backend, agentPid } = await shimmed();
    await backend.createSession("c1");
    const pid = await agentPid();
    expect(alive(pid)).toBe(true);
    await backend.close(); // before the fix: never resolved (the agent kept the pipes)
    expect(alive(pid)).toBe(false);
  });

  it("sees the shim die even while the agent behind it keeps the pipes, fails the run and respawns", async () => {
    const { backend, turn, agentPid } = await shimmed();
    const { sessionId } = await backend.createSession("c1");
    const pid = await agentPid();
    const result = await backend.prompt(turn(sessionId, "orphan"), new RecordingSink(), never());
    expect(result).toEqual({
      status: "failed",
      error: "the agent process exited unexpectedly (signal SIGKILL)",
    });
    // The orphan was killed with its group; the kernel finishes it a moment after the signal (polled, not timed).
    await vi.waitFor(() => expect(alive(pid)).toBe(false), { timeout: 5_000, interval: 20 });
    const again = new RecordingSink();
    expect(await backend.prompt(turn(sessionId, "hi"), again, never())).toEqual({ status: "completed" });
  });
});

describe("ACP backend: each session in its conversation's working directory", () => {
  it("opens, lists and resumes sessions in the directory given; the catalogue's probe serves only its own directory", async () => {
    const { agent, backend, turn } = await setup();
    const other = mkdtempSync(join(tmpdir(), "pheby-acp-workspace-"));
    try {
      await backend.catalogue!(); // opens a probe session in the backend's own directory
      const news = () => agent.calls("session/new").map((c) => c.params.cwd);
      expect(news()).toEqual([agent.dir]);
      const elsewhere = await backend.createSession("c1", { cwd: other });
      expect(news()).toEqual([agent.dir, other]); // the probe was not handed to another directory
      const here = await backend.createSession("c2", { cwd: agent.dir });
      expect(news()).toEqual([agent.dir, other]); // the probe, same directory: no new session
      expect(here.sessionId).not.toBe(elsewhere.sessionId);

      const listed = await backend.listSessions!({ cwd: other });
      expect(listed.map((s) => [s.sessionId, s.cwd])).toEqual([[elsewhere.sessionId, other]]);
      expect(agent.calls("session/list").at(-1)!.params.cwd).toBe(other);

      // After a restart, the session is resumed in its conversation's directory, not the backend's.
      await backend.close();
      const { backend: restarted } = await setup({ env: agent.env, options: { cwd: agent.dir } });
      const result = await restarted.prompt(
        turn(elsewhere.sessionId, "again", { cwd: other }),
        new RecordingSink(),
        never(),
      );
      expect(result).toEqual({ status: "completed" });
      expect(agent.calls("session/resume").map((c) => c.params.cwd)).toEqual([other]);
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });
});
