/**
 * The ACP backend end to end: a real Pheby server with `createAcpBackend` spawning the scripted
 * fake agent as a real child process, driven through `@pheby/client`. The server runs over the
 * in-memory transport (no port), except "files both ways", which needs the HTTP attachment
 * routes on 127.0.0.1:0. Every frame is validated against `@pheby/protocol` (test/setup.ts).
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { messageIdOf } from "@pheby/testkit";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { AcpBackendOptions } from "../../src/agent/acp/index.js";
import { captureLogs, phebyClient, tempDir } from "../helpers.js";
import { FAKE_AGENT_COMMAND, fakeAgentDir } from "./harness.js";
import { framesOf, type PhebyAcp, startPhebyAcp as startPheby } from "./pheby.js";

/** A Pheby server with the ACP backend over the in-memory transport (unless `transport` says ws). */
const startPhebyAcp = (agent: AcpBackendOptions, server: Parameters<typeof startPheby>[1] = {}) =>
  startPheby(agent, { transport: "memory", ...server });

type FakeAgent = ReturnType<typeof fakeAgentDir>;

/** The fake agent's options for a Pheby server; `env` is merged over the fake's own. */
function agentOptions(fake: FakeAgent, extra: Partial<AcpBackendOptions> = {}): AcpBackendOptions {
  return {
    command: FAKE_AGENT_COMMAND,
    cwd: fake.dir,
    allowedFileRoots: [fake.dir],
    respawnBackoffMs: 10,
    requestTimeoutMs: 15_000,
    ...extra,
    env: { ...fake.env, ...extra.env },
  };
}

/** Sessions the agent already holds before Pheby sees them (e.g. made in the agent's own CLI). */
function seedSessions(fake: FakeAgent, sessions: Record<string, { title: string; history?: string[] }>) {
  const state: Record<string, unknown> = {};
  for (const [id, s] of Object.entries(sessions)) {
    state[id] = {
      cwd: fake.dir,
      title: s.title,
      history: (s.history ?? []).map((text, i) => ({ role: i % 2 === 0 ? "user" : "assistant", text })),
      model: "small",
      effort: "medium",
      mode: "auto",
    };
  }
  writeFileSync(fake.env.FAKE_STATE!, JSON.stringify(state));
}

/** Hooks: one fake agent (optionally holding `seed` sessions) behind one Pheby server for the block. */
function useAcpServer(seed?: Parameters<typeof seedSessions>[1]) {
  const env = {} as { fake: FakeAgent; p: PhebyAcp };
  beforeAll(async () => {
    env.fake = fakeAgentDir();
    if (seed) seedSessions(env.fake, seed);
    env.p = await startPhebyAcp(agentOptions(env.fake));
  });
  afterAll(() => env.p.close());
  return env;
}

/** Servers a test starts itself, closed after each test. */
function closeAfterEach(): PhebyAcp[] {
  const servers: PhebyAcp[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });
  return servers;
}

describe("ACP through Pheby: conversations and runs", () => {
  const env = useAcpServer();
  const servers = closeAfterEach();

  it("conversation.create opens an ACP session in the configured cwd", async () => {
    expect(env.fake.calls()).toEqual([]); // the agent is spawned lazily
    const updated = env.p.waitFor("conversation.updated", (m) => m.name === "First");
    const id = await env.p.create("First");
    expect((await updated).conversation_id).toBe(id);
    const [created] = env.fake.calls("session/new");
    expect(created?.params.cwd).toBe(env.fake.dir);
    const { conversations } = await env.p.client.request({ type: "conversation.list" });
    const mine = conversations.find((c) => c.conversation_id === id);
    expect(mine).toMatchObject({ name: "First", source: "acp" });
    expect(mine?.session_id).toMatch(/^sess-/);
  });

  it("streams cumulative deltas, hides thoughts and mirrors the exchange", async () => {
    const id = await env.p.create();
    const run = await env.p.chat(id, "hello there world");
    expect(run.finished.status).toBe("completed");
    expect(run.complete.text).toBe("echo: hello there world");
    expect(run.deltas.length).toBeGreaterThan(0);
    for (const [i, d] of run.deltas.entries()) {
      expect(d.startsWith(run.deltas[i - 1] ?? "")).toBe(true);
      expect(run.complete.text.startsWith(d)).toBe(true);
    }
    expect(JSON.stringify(run.frames)).not.toContain("secret thoughts");
    const history = await env.p.client.request({ type: "conversation.open", conversation_id: id });
    expect(history.messages.map((m) => [m.role, m.text])).toEqual([
      ["user", "hello there world"],
      ["assistant", "echo: hello there world"],
    ]);
    expect(env.fake.calls("session/load")).toEqual([]); // a conversation made here is never replayed
  });

  it("relays tool events with redacted args, durations and truncated failures; results only on activity connections", async () => {
    // A plain v1 connection watches the same run: tool results never reach it.
    const v1 = await phebyClient(env.p.ts, { features: [] });
    const v1Frames: unknown[] = [];
    v1.on("*", (m) => v1Frames.push(m));
    const id = await env.p.create();
    await v1.request({ type: "conversation.open", conversation_id: id });
    const run = await env.p.chat(id, "tools");
    expect(run.finished.status).toBe("completed");
    const tools = framesOf(run.frames, "tool.event");
    expect(tools.map((t) => [t.tool_call_id, t.status])).toEqual([
      ["t1", "running"],
      ["t1", "completed"],
      ["t2", "running"],
      ["t2", "failed"],
      ["t3", "running"],
      ["t3", "completed"], // still open when the turn ended: closed with the turn's status
    ]);
    expect(tools[0]).toMatchObject({
      tool_name: "List files",
      args_redacted: { command: "ls", api_key: "[REDACTED]" },
    });
    expect(tools[1]?.duration_ms).toEqual(expect.any(Number));
    expect(tools[2]?.tool_name).toBe("read_file");
    expect(tools[3]?.error?.startsWith("boom xxx")).toBe(true);
    expect(tools[3]?.error).toHaveLength(300); // the limit exactly, ellipsis included
    const wire = JSON.stringify(env.p.frames);
    expect(wire).not.toContain("sk-123");
    // The default client asks for activity: the result is relayed to it, as the call's text content.
    expect(JSON.stringify(tools)).toContain("/home/secret/file.txt");
    await vi.waitFor(() =>
      expect(v1Frames.some((f) => (f as { type: string }).type === "run.finished")).toBe(true),
    );
    v1.close();
    const v1Wire = JSON.stringify(v1Frames);
    expect(v1Wire).toContain('"tool.event"');
    expect(v1Wire).not.toContain("sk-123");
    expect(v1Wire).not.toContain("/home/secret"); // tool results stay on the server for v1
  });

  it.each([
    ["end_turn", "completed"],
    ["max_tokens", "completed"],
    ["max_turn_requests", "completed"],
    ["cancelled", "cancelled"],
    ["refusal", "failed"],
  ] as const)("stopReason %s becomes run.finished %s", async (reason, status) => {
    const id = await env.p.create();
    const run = await env.p.chat(id, `stop ${reason}`);
    expect(run.finished.status).toBe(status);
    expect(run.complete.text).toBe(`stopping with ${reason}`);
    if (status === "failed") expect(run.finished.error).toBe("the agent refused to continue");
    else expect(run.finished).not.toHaveProperty("error");
  });

  it("a JSON-RPC error fails the run with the agent's message and keeps the partial answer", async () => {
    const id = await env.p.create();
    const run = await env.p.chat(id, "error");
    expect(run.finished).toMatchObject({
      status: "failed",
      error: "the agent reported an error: scripted failure",
    });
    expect(run.complete.text).toBe("about to fail");
  });

  it("the server's paths in an agent's error text reach the client as placeholders", async () => {
    const id = await env.p.create();
    const work = join(env.fake.dir, "notes.md");
    const blob = join(env.p.ts.dataDir, "attachments", "blobs", "0123");
    const config = join(homedir(), ".hermes", "config.yaml");
    const run = await env.p.chat(id, `pathError ${work} ${blob} ${config}`);
    expect(run.finished).toMatchObject({
      status: "failed",
      error:
        "the agent reported an error: cannot open <workdir>/notes.md nor <data>/attachments/blobs/0123 nor ~/.hermes/config.yaml",
    });
    const failed = framesOf(run.frames, "tool.event").find((t) => t.status === "failed");
    expect(failed?.error).toBe("ENOENT: no such file '<workdir>/notes.md'");
    const wire = JSON.stringify(run.frames);
    for (const path of [env.fake.dir, env.p.ts.dataDir, homedir()]) expect(wire).not.toContain(path);
  });

  it("an agent crash mid-run fails the run clearly; the next chat respawns it", async () => {
    const id = await env.p.create();
    const starts = env.fake.calls("initialize").length;
    const crashed = await env.p.chat(id, "crash");
    expect(crashed.finished).toMatchObject({
      status: "failed",
      error: "the agent process exited unexpectedly (exit code 3)",
    });
    expect(crashed.complete.text).toBe("about to crash");
    const again = await env.p.chat(id, "still there");
    expect(again.finished.status).toBe("completed");
    expect(again.complete.text).toBe("echo: still there");
    expect(env.fake.calls("initialize")).toHaveLength(starts + 1);
    // The new process had never seen the session: it was resumed.
    const { conversations } = await env.p.client.request({ type: "conversation.list" });
    const sessionId = conversations.find((c) => c.conversation_id === id)?.session_id;
    expect(env.fake.calls("session/resume").at(-1)?.params.sessionId).toBe(sessionId);
  });

  it("run.cancel: session/cancel to the agent and exactly one cancelled run.finished", async () => {
    const id = await env.p.create();
    const { run_id } = await env.p.client.request({ type: "chat.send", conversation_id: id, text: "slow" });
    await env.p.waitFor(
      "message.delta",
      (m) => m.message_id === messageIdOf(env.p.frames, run_id) && m.text.includes("tick 1"),
    );
    const cancels = env.fake.calls("session/cancel").length;
    const finished = await env.p.client.request({ type: "run.cancel", conversation_id: id, run_id });
    expect(finished).toMatchObject({ type: "run.finished", run_id, status: "cancelled" });
    expect(env.fake.calls("session/cancel")).toHaveLength(cancels + 1);
    // A later run in the same conversation finishes after anything late from the cancelled one.
    expect((await env.p.chat(id, "after cancel")).finished.status).toBe("completed");
    expect(framesOf(env.p.frames, "run.finished").filter((m) => m.run_id === run_id)).toHaveLength(1);
  });

  it("an agent slow to stop: run.finished cancelled once after the grace, and the next chat.send waits for the agent instead of failing", async () => {
    const fake = fakeAgentDir();
    // The engine's grace (200 ms) ends long before the agent stops (1.5 s after session/cancel).
    const p = await startPhebyAcp(agentOptions(fake, { cancelTimeoutMs: 20_000 }), { cancelGraceMs: 200 });
    servers.push(p);
    const id = await p.create();
    const { run_id } = await p.client.request({
      type: "chat.send",
      conversation_id: id,
      text: "stubborn 1500",
    });
    await p.waitFor(
      "message.delta",
      (m) => m.message_id === messageIdOf(p.frames, run_id) && m.text.includes("tick 1"),
    );
    const finished = await p.client.request({ type: "run.cancel", conversation_id: id, run_id });
    expect(finished).toMatchObject({ run_id, status: "cancelled" });
    // Sent while the agent is still busy with the cancelled turn: it must wait for it, not fail.
    const next = await p.chat(id, "after the stubborn one");
    expect(next.finished).toMatchObject({ status: "completed" });
    expect(next.complete.text).toBe("echo: after the stubborn one");
    // The cancelled run ended exactly once, and nothing it sent late leaked out.
    expect(framesOf(p.frames, "run.finished").filter((m) => m.run_id === run_id)).toHaveLength(1);
    expect(p.frames.some((m) => "text" in m && m.text.includes("stopped late"))).toBe(false);
    expect(fake.calls("session/prompt")).toHaveLength(2);
  });

  it("an agent title becomes the name via conversation.updated, unless the user renamed it", async () => {
    const id = await env.p.create();
    const run = await env.p.chat(id, "title");
    const updated = framesOf(env.p.frames, "conversation.updated").filter((m) => m.conversation_id === id);
    expect(updated.at(-1)?.name).toBe("Scripted title");
    // The title arrived before the run ended (updates are applied in order).
    expect(env.p.frames.indexOf(updated.at(-1)!)).toBeLessThan(env.p.frames.indexOf(run.finished));

    await env.p.client.request({ type: "conversation.rename", conversation_id: id, name: "Mine" });
    const before = env.p.frames.length;
    await env.p.chat(id, "title");
    expect(
      env.p.frames.slice(before).filter((m) => m.type === "conversation.updated" && m.conversation_id === id),
    ).toEqual([]);
    const { conversations } = await env.p.client.request({ type: "conversation.list" });
    expect(conversations.find((c) => c.conversation_id === id)?.name).toBe("Mine");
  });
});

describe("ACP through Pheby: the agent's own sessions and history replay", () => {
  const env = useAcpServer({
    "cli-1": { title: "From the CLI", history: ["earlier question", "earlier answer"] },
    "cli-2": { title: "Second", history: ["q2", "a2"] },
    "cli-3": { title: "Third", history: ["q3", "a3"] },
  });

  async function listed() {
    const { conversations } = await env.p.client.request({ type: "conversation.list" });
    return conversations;
  }
  const byName = async (name: string) => (await listed()).find((c) => c.name === name)!;

  it("conversation.list merges session/list (all pages) with Pheby's own index, once each", async () => {
    const own = await env.p.create("Made in Pheby");
    const first = await listed();
    expect(env.fake.calls("session/list").length).toBeGreaterThanOrEqual(2); // 4 sessions, pages of 2
    expect(first.map((c) => c.name).sort()).toEqual(["From the CLI", "Made in Pheby", "Second", "Third"]);
    expect(first.find((c) => c.name === "From the CLI")).toMatchObject({
      session_id: "cli-1",
      source: "acp",
    });
    // Listing again imports nothing twice.
    const second = await listed();
    expect(second.map((c) => c.conversation_id).sort()).toEqual(first.map((c) => c.conversation_id).sort());
    expect(
      second.filter((c) => c.session_id === first.find((x) => x.conversation_id === own)?.session_id),
    ).toHaveLength(1);
  });

  it("opening an imported conversation replays its history into the mirror, once", async () => {
    const conv = await byName("From the CLI");
    const loads = env.fake.calls("session/load").length;
    const history = await env.p.client.request({
      type: "conversation.open",
      conversation_id: conv.conversation_id,
    });
    expect(history.messages.map((m) => [m.role, m.text])).toEqual([
      ["user", "earlier question"],
      ["assistant", "earlier answer"],
    ]);
    expect(env.fake.calls("session/load")).toHaveLength(loads + 1);
    const again = await env.p.client.request({
      type: "conversation.open",
      conversation_id: conv.conversation_id,
    });
    expect(again.messages).toEqual(history.messages); // same rows, same message IDs
    expect(env.fake.calls("session/load")).toHaveLength(loads + 1);

    // The conversation continues where the agent left it, behind the mirrored history.
    const run = await env.p.chat(conv.conversation_id, "and now");
    expect(run.finished.status).toBe("completed");
    const after = await env.p.client.request({
      type: "conversation.open",
      conversation_id: conv.conversation_id,
    });
    expect(after.messages.map((m) => m.text)).toEqual([
      "earlier question",
      "earlier answer",
      "and now",
      "echo: and now",
    ]);
  });

  it("never replays while a run is active", async () => {
    const conv = await byName("Second");
    const { run_id } = await env.p.client.request({
      type: "chat.send",
      conversation_id: conv.conversation_id,
      text: "slow",
    });
    await env.p.waitFor("message.delta", (m) => m.message_id === messageIdOf(env.p.frames, run_id));
    const loads = env.fake.calls("session/load").length;
    const open = await env.p.client.request({
      type: "conversation.open",
      conversation_id: conv.conversation_id,
    });
    expect(open.run).toMatchObject({ run_id, status: "running" });
    expect(open.messages.map((m) => m.text)).toEqual(["slow"]);
    expect(env.fake.calls("session/load")).toHaveLength(loads);
    await env.p.client.request({ type: "run.cancel", conversation_id: conv.conversation_id, run_id });
  });
});

describe("ACP through Pheby: the agent's declared capabilities", () => {
  const servers = closeAfterEach();

  it("a lazily started agent declares its capabilities before the server relies on them", async () => {
    const fake = fakeAgentDir();
    seedSessions(fake, { "cli-1": { title: "Not listed", history: ["q", "a"] } });
    // An agent without session/list, session/load, close or delete.
    const env = { FAKE_CAPS: JSON.stringify({ loadSession: false, sessionCapabilities: { resume: {} } }) };
    const logs = captureLogs("debug");
    const dataDir = tempDir();
    const first = await startPhebyAcp(agentOptions(fake, { env }), { dataDir, logger: logs.logger });
    servers.push(first);
    expect((await first.client.request({ type: "conversation.list" })).conversations).toEqual([]);
    expect(fake.calls("initialize")).toHaveLength(1); // listing brought the agent up
    expect(fake.calls("session/list")).toEqual([]);
    const id = await first.create("Kept");
    await first.ts.close();

    // A restarted server: the agent is not running yet, so its capabilities are still unknown.
    const second = await startPhebyAcp(agentOptions(fake, { env }), { dataDir, logger: logs.logger });
    servers.push(second);
    await second.client.request({ type: "conversation.delete", conversation_id: id });
    expect(fake.calls("initialize")).toHaveLength(2);
    expect(fake.calls("session/close")).toEqual([]);
    expect(fake.calls("session/delete")).toEqual([]);
    expect(logs.text()).not.toContain("could not delete the session");
  });

  it("a history replay that fails falls back to the mirror and logs at debug", async () => {
    const fake = fakeAgentDir();
    seedSessions(fake, { "cli-1": { title: "Hangs on load", history: ["q", "a"] } });
    const logs = captureLogs("debug");
    const p = await startPhebyAcp(
      agentOptions(fake, { env: { FAKE_HANG: "session/load" }, requestTimeoutMs: 1_000 }),
      { logger: logs.logger },
    );
    servers.push(p);
    const [conv] = (await p.client.request({ type: "conversation.list" })).conversations;
    const history = await p.client.request({
      type: "conversation.open",
      conversation_id: conv!.conversation_id,
    });
    expect(history.messages).toEqual([]);
    expect(logs.text()).toMatch(/"level":20.*agent history replay failed; serving the mirror/);
    // The failure counts as the one attempt; the conversation still works (the agent respawns).
    const run = await p.chat(conv!.conversation_id, "hi");
    expect(run.finished.status).toBe("completed");
    await p.client.request({ type: "conversation.open", conversation_id: conv!.conversation_id });
    expect(fake.calls("session/load")).toHaveLength(1);
  });

  it("an agent that cannot start: conversation.create gets internal_error (details only in the log) and the server survives", async () => {
    const fake = fakeAgentDir();
    const p = await startPhebyAcp(agentOptions(fake, { env: { FAKE_EXIT_AT_START: "1" } }));
    servers.push(p);
    const err = await p.client.request({ type: "conversation.create" }).catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: "internal_error",
      message: "Internal server error",
    });
    expect((await p.client.request({ type: "conversation.list" })).conversations).toEqual([]);
  });
});

describe("ACP through Pheby: decisions", () => {
  const env = useAcpServer();

  /** Start a run and wait for its approval.request. */
  async function asked(text: string) {
    const id = await env.p.create();
    const { run_id } = await env.p.client.request({ type: "chat.send", conversation_id: id, text });
    const request = await env.p.waitFor("approval.request", (m) => m.run_id === run_id);
    return { id, run_id, request };
  }
  const finished = (run_id: string) => env.p.waitFor("run.finished", (m) => m.run_id === run_id);
  const completeOf = (run_id: string) =>
    env.p.waitFor("message.complete", (m) => m.message_id === messageIdOf(env.p.frames, run_id));

  it("session/request_permission → approval.request with Hermes's choices; once → allow_once", async () => {
    const { id, run_id, request } = await asked("permission hermes");
    expect(request).toMatchObject({
      conversation_id: id,
      command: "rm -rf build",
      description: "Destructive shell command",
      choices: ["once", "session", "always", "deny"],
    });
    const resolved = await env.p.client.request({
      type: "approval.respond",
      approval_id: request.approval_id,
      choice: "once",
    });
    expect(resolved).toMatchObject({ approval_id: request.approval_id, choice: "once", accepted: true });
    expect((await finished(run_id)).status).toBe("completed");
    expect((await completeOf(run_id)).text).toBe("chose allow_once");
    const tool = framesOf(env.p.frames, "tool.event").filter((t) => t.run_id === run_id);
    expect(tool.map((t) => t.status)).toEqual(["running", "completed"]);
  });

  it.each([
    ["always", "chose proceed_always"],
    ["deny", "chose cancel"],
  ] as const)("generic options: only once/always/deny offered; %s → %s", async (choice, said) => {
    const { run_id, request } = await asked("permission generic");
    expect(request.choices).toEqual(["once", "always", "deny"]);
    await env.p.client.request({ type: "approval.respond", approval_id: request.approval_id, choice });
    await finished(run_id);
    expect((await completeOf(run_id)).text).toBe(said);
  });

  it("a choice the agent did not offer is accepted and applied as the nearest it offers (session → once)", async () => {
    const { run_id, request } = await asked("permission generic");
    const resolved = await env.p.client.request({
      type: "approval.respond",
      approval_id: request.approval_id,
      choice: "session",
    });
    expect(resolved).toMatchObject({ choice: "session", accepted: true });
    expect((await completeOf(run_id)).text).toBe("chose proceed_once");
  });

  it("the agent withdraws its question: approval.resolved not accepted", async () => {
    const { run_id, request } = await asked("permission hermes withdraw");
    const resolved = await env.p.waitFor("approval.resolved", (m) => m.approval_id === request.approval_id);
    expect(resolved).toMatchObject({ choice: "deny", accepted: false });
    await finished(run_id);
  });

  it("cancel while an approval is pending: withdrawn, one cancelled run.finished", async () => {
    const { id, run_id, request } = await asked("permission hermes");
    const done = await env.p.client.request({ type: "run.cancel", conversation_id: id, run_id });
    expect(done).toMatchObject({ status: "cancelled" });
    expect(
      await env.p.waitFor("approval.resolved", (m) => m.approval_id === request.approval_id),
    ).toMatchObject({
      accepted: false,
    });
    expect((await env.p.chat(id, "next")).finished.status).toBe("completed");
    expect(framesOf(env.p.frames, "run.finished").filter((m) => m.run_id === run_id)).toHaveLength(1);
  });

  it("YOLO answers once itself (no approval.request) and switches the agent to its yolo mode", async () => {
    const id = await env.p.create();
    await env.p.client.request({ type: "yolo.set", conversation_id: id, enabled: true });
    const run = await env.p.chat(id, "permission hermes");
    expect(run.complete.text).toBe("chose allow_once");
    expect(framesOf(env.p.frames, "approval.request").filter((m) => m.conversation_id === id)).toEqual([]);
    expect(env.fake.calls("session/set_mode").at(-1)?.params.modeId).toBe("yolo");
  });

  it("elicitation/create (Hermes clarify form) → clarify.request; a choice reaches the agent as accept", async () => {
    const id = await env.p.create();
    const { run_id } = await env.p.client.request({
      type: "chat.send",
      conversation_id: id,
      text: "clarify",
    });
    const q = await env.p.waitFor("clarify.request", (m) => m.run_id === run_id);
    expect(q).toMatchObject({ question: "Need input\nDeploy where?", allow_free_text: true });
    expect(q.choices).not.toContain("Other (type your answer)"); // free text replaces it
    expect(q.choices).toContain("staging");
    await env.p.client.request({ type: "clarify.respond", clarify_id: q.clarify_id, response: "staging" });
    const text = (await completeOf(run_id)).text;
    expect(text).toContain('"action":"accept"');
    expect(text).toContain("staging");
  });

  it("a free-text elicitation → clarify.request without choices; the text reaches the agent", async () => {
    const id = await env.p.create();
    const { run_id } = await env.p.client.request({
      type: "chat.send",
      conversation_id: id,
      text: "clarify free",
    });
    const q = await env.p.waitFor("clarify.request", (m) => m.run_id === run_id);
    expect(q).toMatchObject({ question: "Need input\nYour name?", choices: null, allow_free_text: true });
    await env.p.client.request({ type: "clarify.respond", clarify_id: q.clarify_id, response: "Ada" });
    expect((await completeOf(run_id)).text).toContain('"answer":"Ada"');
  });

  it("models and reasoning from config options; a conversation override reaches the agent", async () => {
    const id = await env.p.create();
    const models = await env.p.client.request({ type: "models.list", conversation_id: id });
    expect(models.providers.map((m) => [m.slug, m.models])).toEqual([
      ["cloud", ["big", "small"]],
      ["local", ["tiny"]],
    ]);
    expect(models.current_model).toBe("small");
    await env.p.client.request({ type: "model.set", conversation_id: id, model: "big" });
    await env.p.client.request({ type: "reasoning.set", conversation_id: id, effort: "high" });
    const run = await env.p.chat(id, "whoami");
    expect(run.complete.text).toMatch(/^model=big effort=high /);
  });
});

describe("ACP through Pheby: agents without config options", () => {
  const servers = closeAfterEach();

  it("legacy models: listed and applied with session/set_model; reasoning is not_implemented", async () => {
    const fake = fakeAgentDir();
    const p = await startPhebyAcp(agentOptions(fake, { env: { FAKE_MODELS: "legacy" } }));
    servers.push(p);
    // First request on a fresh server: the capability is only known once the agent is asked.
    const err = await p.client.request({ type: "reasoning.set", effort: "high" }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "not_implemented" });
    const models = await p.client.request({ type: "models.list" });
    expect(models.providers.flatMap((m) => m.models)).toEqual(["m-one", "m-two"]);
    const id = await p.create();
    await p.client.request({ type: "model.set", conversation_id: id, model: "m-two" });
    expect((await p.chat(id, "whoami")).complete.text).toMatch(/^model=m-two /);
    expect(fake.calls("session/set_model").at(-1)?.params.modelId).toBe("m-two");
  });

  it("no models at all: models.list is not_implemented", async () => {
    const fake = fakeAgentDir();
    const p = await startPhebyAcp(agentOptions(fake, { env: { FAKE_MODELS: "none" } }));
    servers.push(p);
    const err = await p.client.request({ type: "models.list" }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "not_implemented" });
  });
});

describe("ACP through Pheby: files both ways", () => {
  const servers = closeAfterEach();

  it("image and resource blocks become outbound attachments of the run's draft, downloadable byte for byte", async () => {
    const fake = fakeAgentDir();
    const p = await startPhebyAcp(agentOptions(fake), { allowedFileRoots: [fake.dir], transport: "ws" });
    servers.push(p);
    const id = await p.create();
    const run = await p.chat(id, "files");
    expect(run.finished.status).toBe("completed");
    // attachment.added carries no run_id; it belongs to the run through the draft message_id.
    const added = framesOf(p.frames, "attachment.added")
      .filter((m) => m.conversation_id === id)
      .map((m) => m.attachment);
    expect(added.map((a) => [a.filename, a.kind, a.direction, a.message_id])).toEqual([
      ["image.png", "image", "outbound", `draft-${run.runId}`],
      ["report.md", "document", "outbound", `draft-${run.runId}`],
    ]);
    expect(added[0]!.inline_image).toBe(true);
    const report = await p.client.download(added[1]!);
    expect(Buffer.from(report.bytes!).toString()).toBe("# Report");
    const open = await p.client.request({ type: "conversation.open", conversation_id: id });
    expect(open.attachments.map((a) => a.attachment_id)).toEqual(added.map((a) => a.attachment_id));
  });

  it("MEDIA: lines inside the allowed roots are copied into the store, the tags stripped; others never served", async () => {
    const fake = fakeAgentDir();
    const p = await startPhebyAcp(agentOptions(fake), { allowedFileRoots: [fake.dir], transport: "ws" });
    servers.push(p);
    mkdirSync(join(fake.dir, "out"));
    const inside = join(fake.dir, "out", "summary.txt");
    writeFileSync(inside, "the agent's summary\n");
    const outside = join(mkdtempSync(join(tmpdir(), "pheby-outside-")), "passwd");
    writeFileSync(outside, "root:x:0:0\n");
    const id = await p.create();
    const run = await p.chat(id, `media ${inside} ${outside}`);
    expect(run.complete.text).toBe("Result:\nDone. MEDIA:not-a-line");
    const added = framesOf(p.frames, "attachment.added")
      .filter((m) => m.conversation_id === id)
      .map((m) => m.attachment);
    expect(added.map((a) => a.filename)).toEqual(["summary.txt"]);
    const copy = await p.client.download(added[0]!);
    expect(Buffer.from(copy.bytes!).toString()).toBe(readFileSync(inside, "utf8"));
  });

  it("client uploads reach the agent as image, resource_link and embedded resource blocks", async () => {
    const fake = fakeAgentDir();
    const p = await startPhebyAcp(agentOptions(fake), { transport: "ws" });
    servers.push(p);
    const id = await p.create();
    // A real PNG header (sniffed as an image), a PDF (linked by path) and a small text (inlined).
    const png = Buffer.from("89504e470d0a1a0a0000000d4948445200000001000000010806000000", "hex");
    const ids: string[] = [];
    for (const [bytes, filename, contentType] of [
      [png, "a.png", "image/png"],
      [Buffer.from("%PDF-1.4\n"), "b.pdf", "application/pdf"],
      [Buffer.from("# notes"), "c.md", "text/markdown"],
    ] as const) {
      ids.push((await p.client.upload(id, new Uint8Array(bytes), { filename, contentType })).attachment_id);
    }
    const run = await p.chat(id, "whoami", undefined, ids);
    expect(run.complete.text).toContain("blocks=text,image,resource_link,resource(# notes)");
    const prompt = fake.calls("session/prompt").at(-1)!.params.prompt;
    expect(prompt[1]).toMatchObject({ type: "image", mimeType: "image/png", data: png.toString("base64") });
    // The link points into Pheby's own store, never at a client-chosen path.
    expect(prompt[2]).toMatchObject({ type: "resource_link", name: "b.pdf" });
    expect(prompt[2].uri).toMatch(/^file:\/\/.+\/[0-9a-f]{32}$/);
  });
});

describe("ACP through Pheby: other agents' behaviour (OpenCode, Codex, Gemini CLI, Claude Code)", () => {
  const servers = closeAfterEach();
  const names = async (p: PhebyAcp) =>
    (await p.client.request({ type: "conversation.list" })).conversations.map((c) => c.name);

  it("the catalogue's probe session never shows as a conversation, across a restart", async () => {
    const fake = fakeAgentDir();
    const dataDir = tempDir();
    const first = await startPhebyAcp(agentOptions(fake), { dataDir });
    await first.client.request({ type: "models.list" });
    expect(await names(first)).toEqual([]);
    first.client.close();
    await first.ts.close(); // the data dir stays
    const p = await startPhebyAcp(agentOptions(fake), { dataDir });
    servers.push(p);
    expect(await names(p)).toEqual([]); // before: one more empty "New chat" per restart
    await p.create("Mine");
    expect(await names(p)).toEqual(["Mine"]);
  });

  it("reasoning follows the model: efforts of the conversation's model, a stale one skipped with a notice (OpenCode)", async () => {
    const fake = fakeAgentDir();
    const p = await startPhebyAcp(agentOptions(fake, { env: { FAKE_MODELS: "opencode" } }));
    servers.push(p);
    const id = await p.create();
    await p.client.request({ type: "model.set", conversation_id: id, model: "thinker" });
    await p.chat(id, "whoami"); // the backend learns what `thinker` offers
    const thinking = await p.client.request({ type: "reasoning.current", conversation_id: id });
    expect(thinking.supported_efforts).toEqual(["low", "medium", "high"]);
    await p.client.request({ type: "reasoning.set", conversation_id: id, effort: "high" });
    expect((await p.chat(id, "whoami")).complete.text).toMatch(/^model=thinker effort=high /);

    await p.client.request({ type: "model.set", conversation_id: id, model: "fast" });
    const run = await p.chat(id, "whoami");
    expect(run.finished.status).toBe("completed"); // before: the stale effort failed the run
    expect(run.complete.text).toMatch(/^model=fast effort=default /);
    const notice = framesOf(run.frames, "message.complete").find((m) => m.kind === "notice");
    expect(notice?.text).toContain("reasoning effort high is not offered with the model fast");
    const fast = await p.client.request({ type: "reasoning.current", conversation_id: id });
    expect(fast.supported_efforts).toEqual([]);
  });

  // Agents send a tool's name and arguments late, in updates; the store once kept the first name and {}.
  it("conversation.open shows a tool's latest name and arguments, while it runs and after its run ended", async () => {
    const fake = fakeAgentDir();
    const p = await startPhebyAcp(agentOptions(fake));
    servers.push(p);
    const id = await p.create();
    const { run_id } = await p.client.request({ type: "chat.send", conversation_id: id, text: "lateTool" });
    await p.waitFor("tool.event", (m) => m.run_id === run_id && m.tool_name === "Bash");
    const running = await p.client.request({ type: "conversation.open", conversation_id: id });
    expect(running.tools).toEqual([
      expect.objectContaining({
        tool_call_id: "lt1",
        tool_name: "Bash",
        status: "running",
        args_redacted: { command: "sleep 600", description: "Wait" },
      }),
    ]);
    await p.client.request({ type: "run.cancel", conversation_id: id, run_id });
    const ended = await p.client.request({ type: "conversation.open", conversation_id: id });
    expect(ended.tools).toEqual([
      expect.objectContaining({ tool_call_id: "lt1", tool_name: "Bash", status: "cancelled" }),
    ]);
  });

  it("late tool arguments: a second running tool.event with the merged, redacted args; one completed", async () => {
    const fake = fakeAgentDir();
    const p = await startPhebyAcp(agentOptions(fake));
    servers.push(p);
    const run = await p.chat(await p.create(), "opencodeTool");
    const events = framesOf(run.frames, "tool.event").map((e) => [e.status, e.tool_name, e.args_redacted]);
    expect(events).toEqual([
      ["running", "bash", { cwd: "/work" }],
      [
        "running",
        "bash",
        { cwd: "/work", command: "ls -la", description: "List files", token: "[REDACTED]" },
      ],
      ["completed", "bash", undefined],
    ]);
  });
});
