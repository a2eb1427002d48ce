/**
 * Port-level contract tests of the ACP backend against the scripted fake agent
 * (a real child process speaking ACP over stdio).
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { AcpBackendOptions } from "../../src/agent/acp/index.js";
import { createAcpBackend } from "../../src/agent/acp/index.js";
import type { AgentBackend, TurnInput } from "../../src/agent/port.js";
import { FAKE_AGENT_COMMAND, fakeAgentDir, NO_SETTINGS, RecordingHost, RecordingSink } from "./harness.js";

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
  const turn = (sessionId: string, text: string, extra: Partial<TurnInput> = {}): TurnInput => ({
    conversationId: "c1",
    sessionId,
    text,
    attachments: [],
    settings: NO_SETTINGS,
    ...extra,
  });
  return { agent, host, root, backend, turn };
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
    // stderr goes to debug logs only
    expect(
      host.logs.some((l) => l.level === "debug" && JSON.stringify(l.obj).includes("fake agent started")),
    ).toBe(true);
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
