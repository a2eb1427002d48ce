/**
 * Hermes facts Pheby relies on (agent/acp/hermes.ts) and how an MCP call finds its session
 * (agent/acp/mcp-caller.ts). The live checks are in test/agents/hermes.test.ts.
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  hermesDeleteCommand,
  isHermes,
  parseHermesNotification,
  providersOfPrefixedModels,
  runCommand,
} from "../../src/agent/acp/hermes.js";
import { type AcpBackendOptions, createAcpBackend } from "../../src/agent/acp/index.js";
import { callerOf } from "../../src/agent/acp/mcp.js";
import type { AgentBackend } from "../../src/agent/port.js";
import { FAKE_AGENT_COMMAND, fakeAgentDir, RecordingHost, RecordingSink, turnInput } from "./harness.js";

describe("Hermes over ACP", () => {
  it("is recognised by its agentInfo name", () => {
    expect(isHermes({ protocolVersion: 1, agentInfo: { name: "hermes-agent", version: "0.19.0" } })).toBe(
      true,
    );
    expect(isHermes({ protocolVersion: 1, agentInfo: { name: "qwen-code", version: "1" } })).toBe(false);
    expect(isHermes(null)).toBe(false);
  });

  it("deletes a session with its own command: `acp` becomes `sessions delete -y <id>`", () => {
    expect(hermesDeleteCommand(["/opt/hermes/bin/hermes", "acp"], "20260902_101112_ab12")).toEqual([
      "/opt/hermes/bin/hermes",
      "sessions",
      "delete",
      "-y",
      "20260902_101112_ab12",
    ]);
    expect(hermesDeleteCommand(["python3", "-m", "hermes_cli.main", "acp"], "s")).toEqual([
      "python3",
      "-m",
      "hermes_cli.main",
      "sessions",
      "delete",
      "-y",
      "s",
    ]);
    expect(hermesDeleteCommand(["hermes-acp-wrapper"], "s")).toBeNull();
    expect(hermesDeleteCommand(["hermes", "acp", "--verbose"], "s")).toBeNull();
  });

  it("runs a command to completion, and reports a failure or a hang", async () => {
    const opts = { cwd: process.cwd(), env: process.env, timeoutMs: 10_000 };
    await runCommand([process.execPath, "-e", "process.exit(0)"], opts);
    await expect(
      runCommand([process.execPath, "-e", "console.error('Session not found: x'); process.exit(1)"], opts),
    ).rejects.toThrow("exited with code 1: Session not found: x");
    await expect(
      runCommand([process.execPath, "-e", "setTimeout(() => {}, 60000)"], { ...opts, timeoutMs: 200 }),
    ).rejects.toThrow("timed out after 200 ms");
    await expect(runCommand(["/nonexistent/hermes", "sessions"], opts)).rejects.toThrow(/ENOENT/);
  });

  it("groups provider:model IDs by provider, named from Hermes's descriptions, keeping whole IDs", () => {
    expect(
      providersOfPrefixedModels([
        {
          modelId: "openrouter:anthropic/claude-sonnet-4",
          name: "anthropic/claude-sonnet-4",
          description: "Provider: OpenRouter • current",
        },
        {
          modelId: "openrouter:qwen/qwen3:free",
          name: "qwen/qwen3:free",
          description: "Provider: OpenRouter",
        },
        { modelId: "custom:fake-model", name: "fake-model" },
      ]),
    ).toEqual([
      {
        slug: "openrouter",
        name: "OpenRouter",
        models: ["openrouter:anthropic/claude-sonnet-4", "openrouter:qwen/qwen3:free"],
      },
      { slug: "custom", name: "custom", models: ["custom:fake-model"] },
    ]);
    expect(providersOfPrefixedModels([{ modelId: "custom:a" }, { modelId: "plain-model" }])).toBeNull();
    expect(providersOfPrefixedModels([])).toBeNull();
  });

  it("reads a _hermes/notification, ignoring what is not one", () => {
    expect(
      parseHermesNotification({
        sessionId: "s1",
        kind: "completion",
        title: "Background Process Failed (exit 1): gh pr checks 94",
        text: "[IMPORTANT: Background process proc_1 exited (exit code 1)]",
        notificationIds: ["deleg-1", 7],
      }),
    ).toEqual({
      sessionId: "s1",
      kind: "completion",
      title: "Background Process Failed (exit 1): gh pr checks 94",
      text: "[IMPORTANT: Background process proc_1 exited (exit code 1)]",
      notificationIds: ["deleg-1"],
    });
    expect(parseHermesNotification({ sessionId: "s1", text: "  " })).toBeNull();
    expect(parseHermesNotification({ text: "no session" })).toBeNull();
    expect(parseHermesNotification(null)).toBeNull();
  });
});

describe("the session of an MCP call", () => {
  const call = { tool: "ask_user", args: { question: "Deploy where?" } };
  const turn = (
    sessionId: string,
    tools: Array<{ name: string; args?: Record<string, unknown>; ended?: boolean }> = [],
  ) => ({
    sessionId,
    tools: tools.map((t) => ({ name: t.name, args: t.args, ended: t.ended ?? false })),
  });

  it("is the one session running a turn", () => {
    expect(callerOf([turn("a")], call)).toBe("a");
    expect(callerOf([], call)).toBeNull();
  });

  it("among several turns, is the one showing that tool call with those arguments", () => {
    const turns = [
      turn("a", [{ name: "mcp__pheby__ask_user", args: { question: "Something else?" } }]),
      turn("b", [{ name: "mcp__pheby__ask_user", args: { question: "Deploy where?" } }]),
      turn("c", [{ name: "terminal", args: { question: "Deploy where?" } }]),
    ];
    expect(callerOf(turns, call)).toBe("b");
    // Key order does not matter.
    expect(
      callerOf(
        [turn("a", [{ name: "pheby_ask_user", args: { choices: ["x"], question: "q" } }]), turn("b")],
        { tool: "ask_user", args: { question: "q", choices: ["x"] } },
      ),
    ).toBe("a");
  });

  it("falls back to the tool name alone, and gives up when that is ambiguous or the call ended", () => {
    expect(callerOf([turn("a", [{ name: "ask_user (pheby MCP Server)" }]), turn("b")], call)).toBe("a");
    expect(callerOf([turn("a", [{ name: "ask_user", args: { other: 1 } }]), turn("b")], call)).toBe("a");
    expect(callerOf([turn("a", [{ name: "ask_user" }]), turn("b", [{ name: "ask_user" }])], call)).toBeNull();
    expect(callerOf([turn("a", [{ name: "ask_user", ended: true }]), turn("b")], call)).toBeNull();
  });
});

describe("the ACP backend with an agent that says it is Hermes (scripted)", () => {
  const backends: AgentBackend[] = [];
  afterEach(async () => {
    for (const b of backends.splice(0)) await b.close();
  });

  /** The fake agent as Hermes 0.19: its name, no session/delete or close over ACP, `provider:model` models. */
  async function hermesLike(extra: Partial<AcpBackendOptions> = {}) {
    const fake = fakeAgentDir();
    const backend = createAcpBackend({
      command: [...FAKE_AGENT_COMMAND, "acp"],
      cwd: fake.dir,
      env: {
        ...fake.env,
        FAKE_NAME: "hermes-agent",
        FAKE_MODELS: "hermes",
        FAKE_CAPS: JSON.stringify({ sessionCapabilities: { list: {}, resume: {} } }),
      },
      allowedFileRoots: [],
      ...extra,
    });
    backends.push(backend);
    await backend.start(new RecordingHost());
    await backend.ensureReady();
    return { fake, backend };
  }

  it("groups its models by provider, keeping the whole IDs", async () => {
    const { backend } = await hermesLike();
    const catalogue = await backend.catalogue!();
    expect(catalogue.providers).toEqual([
      { slug: "custom", name: "Custom endpoint", models: ["custom:fake-model"] },
      {
        slug: "openrouter",
        name: "OpenRouter",
        models: ["openrouter:qwen/qwen3:free", "openrouter:anthropic/claude-sonnet-4"],
      },
    ]);
    expect(catalogue.defaultModel).toEqual({ model: "custom:fake-model", provider: "custom" });
  });

  it("deletes a session with `<command> sessions delete -y <id>`, and never opens it again", async () => {
    const { fake, backend } = await hermesLike();
    expect(backend.capabilities.deleteSession).toBe(true);
    const { sessionId } = await backend.createSession("c");
    expect(
      await backend.prompt(
        turnInput(sessionId, "echo hi"),
        new RecordingSink(),
        new AbortController().signal,
      ),
    ).toEqual({
      status: "completed",
    });
    await backend.deleteSession!(sessionId);
    expect(fake.calls("cli sessions delete")).toEqual([
      { method: "cli sessions delete", params: { sessionId }, pid: expect.any(Number) },
    ]);
    // Gone from the agent's store (the fake's list reads it), and refused from now on.
    expect((await backend.listSessions!()).map((s) => s.sessionId)).not.toContain(sessionId);
    expect(
      await backend.prompt(
        turnInput(sessionId, "echo again"),
        new RecordingSink(),
        new AbortController().signal,
      ),
    ).toEqual({
      status: "failed",
      error: "this conversation's agent session was deleted",
    });
    await expect(backend.loadHistory!(sessionId)).rejects.toThrow("was deleted");
    expect(fake.calls("session/prompt")).toHaveLength(1);
    expect(fake.calls("session/load")).toEqual([]);
  });

  it("reports a failed delete command", async () => {
    const { backend } = await hermesLike();
    await expect(backend.deleteSession!("no-such-session")).rejects.toThrow(
      "exited with code 1: Session 'no-such-session' not found.",
    );
  });

  it("a Hermes approval expires a second before Hermes's own 60 s", async () => {
    const { backend } = await hermesLike();
    const { sessionId } = await backend.createSession("c");
    const sink = new RecordingSink({ permission: async () => ({ outcome: "selected", choice: "once" }) });
    await backend.prompt(turnInput(sessionId, "permission"), sink, new AbortController().signal);
    expect(sink.of("permission")[0]?.question.expiresInMs).toBe(59_000);
  });

  it("other agents' approvals have no expiry Pheby knows of", async () => {
    const fake = fakeAgentDir();
    const backend = createAcpBackend({
      command: FAKE_AGENT_COMMAND,
      cwd: fake.dir,
      env: fake.env,
      allowedFileRoots: [],
    });
    backends.push(backend);
    await backend.start(new RecordingHost());
    const { sessionId } = await backend.createSession("c");
    const sink = new RecordingSink({ permission: async () => ({ outcome: "selected", choice: "once" }) });
    await backend.prompt(turnInput(sessionId, "permission"), sink, new AbortController().signal);
    expect(sink.of("permission")[0]?.question.expiresInMs).toBeUndefined();
    expect(backend.capabilities.deleteSession).toBe(true); // the fake advertises session/delete
  });
});
