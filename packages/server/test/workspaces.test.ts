// The `workspaces` extension's server core over real sockets and real SQLite files: two agents side by
// side, each conversation placed by conversation.create's rules and answered by its own agent in its own
// working directory; per-agent status events and global settings; a v1 connection sees v1 byte for byte.
// Every frame is validated against @pheby/protocol by the test client (helpers' violations).
import { execFileSync } from "node:child_process";
import { mkdirSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { FEATURE_WORKSPACES, LIMITS, type ServerMessage, type ServerMessageOf } from "@pheby/protocol";
import { afterEach, describe, expect, it } from "vitest";
import {
  type AgentBackend,
  createPhebyServer,
  createSimulatorBackend,
  type TurnInput,
  type TurnResult,
} from "../src/index.js";
import {
  helloWith,
  NO_CAPABILITIES,
  type RawClient,
  SECRET,
  send,
  startServer,
  type TestServer,
  type TestServerOptions,
  useTempDirs,
} from "./helpers.js";

const WS = [FEATURE_WORKSPACES];
const servers: TestServer[] = [];
const clients: RawClient[] = [];
const temp = useTempDirs();
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  for (const s of servers.splice(0)) await s.cleanup();
});

async function serve(options: TestServerOptions): Promise<TestServer> {
  const ts = await startServer(options);
  servers.push(ts);
  return ts;
}

async function connect(ts: TestServer, features: string[] = WS): Promise<RawClient> {
  const c = await helloWith(ts, features);
  clients.push(c);
  return c;
}

/** Two directories: `plain` (no git) and `repo` (a real git repository, with a subfolder). */
function directories(): { plain: string; repo: string } {
  const plain = realpathSync(temp());
  const repo = realpathSync(temp());
  execFileSync("git", ["init", "-q", repo], { env: { ...process.env, GIT_CONFIG_GLOBAL: "/dev/null" } });
  mkdirSync(join(repo, "sub"));
  return { plain, repo };
}

/** A backend that answers each turn with its own name (and records the turns' cwd), gated by `hold`. */
function namedBackend(name: string, opts: { hold?: Promise<void>; crash?: boolean } = {}) {
  const turns: TurnInput[] = [];
  const sessions: Array<{ conversationId: string; cwd: string | undefined }> = [];
  const backend: AgentBackend = {
    name: "scripted",
    capabilities: NO_CAPABILITIES,
    async start() {},
    async createSession(conversationId, o) {
      sessions.push({ conversationId, cwd: o?.cwd });
      return { sessionId: `same-session-${sessions.length}` };
    },
    async prompt(input, sink): Promise<TurnResult> {
      turns.push(input);
      if (opts.crash) throw new Error(`${name} crashed`);
      await opts.hold;
      sink.text(`answered by ${name}`);
      return { status: "completed" };
    },
    async close() {},
  };
  return { backend, turns, sessions };
}

type Entry = ServerMessageOf<"conversation.snapshot">["conversations"][number];

async function list(c: RawClient, extra: Record<string, unknown> = {}): Promise<Entry[]> {
  return (await c.ok({ type: "conversation.list", ...extra }, "conversation.snapshot")).conversations;
}

async function create(c: RawClient, extra: Record<string, unknown> = {}) {
  return c.ok({ type: "conversation.create", ...extra }, "conversation.created");
}

/** The text of the run's final answer. */
async function answer(c: RawClient, runId: string): Promise<string> {
  const messageId = await c.runMessageId(runId);
  const done = (await c.nextAny(
    (m) => m.type === "message.complete" && m.message_id === messageId,
  )) as ServerMessageOf<"message.complete">;
  return done.text;
}

describe("workspaces: agents and workspaces", () => {
  it("lists agents (idle until first use) and workspaces (git or not) by id and name only", async () => {
    const { plain, repo } = directories();
    const ts = await serve({
      agents: [
        { id: "alpha", name: "Alpha", backend: createSimulatorBackend({ delayMs: 1 }) },
        { id: "beta", name: "Beta", backend: createSimulatorBackend({ delayMs: 1 }) },
      ],
      workspaces: [
        { id: "notes", name: "Notes", path: plain, agents: ["alpha"] },
        { id: "site", name: "Site", path: join(repo, "sub") },
      ],
    });
    const c = await connect(ts);
    const agents = await c.ok({ type: "agents.list" }, "agents.snapshot");
    expect(agents.agents).toEqual([
      { agent_id: "alpha", name: "Alpha", status: "idle" },
      { agent_id: "beta", name: "Beta", status: "idle" },
    ]);
    const workspaces = await c.ok({ type: "workspaces.list" }, "workspaces.snapshot");
    expect(workspaces.workspaces).toEqual([
      { workspace_id: "notes", name: "Notes", agents: ["alpha"], git: false },
      { workspace_id: "site", name: "Site", agents: ["alpha", "beta"], git: true },
    ]);
    // No path of the server reached the client.
    for (const raw of c.raw) {
      expect(raw).not.toContain(plain);
      expect(raw).not.toContain(repo);
    }
  });

  it("places conversation.create by its rules, and refuses what it cannot honour naming the field", async () => {
    const { plain, repo } = directories();
    const a = namedBackend("A");
    const b = namedBackend("B");
    const ts = await serve({
      agents: [
        { id: "alpha", name: "Alpha", backend: a.backend },
        { id: "beta", name: "Beta", backend: b.backend },
      ],
      workspaces: [
        { id: "notes", name: "Notes", path: plain, agents: ["alpha"] },
        { id: "site", name: "Site", path: repo, agents: ["beta", "alpha"] },
      ],
    });
    const c = await connect(ts);
    const placed = async (extra: Record<string, unknown>) => {
      const created = await create(c, extra);
      return [created.agent_id, created.workspace_id, created.branch];
    };
    expect(await placed({})).toEqual(["alpha", "notes", null]);
    expect(await placed({ workspace_id: "site" })).toEqual(["beta", "site", null]);
    expect(await placed({ agent_id: "beta" })).toEqual(["beta", "site", null]);
    expect(await placed({ agent_id: "alpha", workspace_id: "site" })).toEqual(["alpha", "site", null]);
    // Each session was created in its workspace's directory (never sent to the client).
    expect(a.sessions.map((s) => s.cwd)).toEqual([plain, repo]);
    expect(b.sessions.map((s) => s.cwd)).toEqual([repo, repo]);

    const before = (await list(c)).length;
    const refused = async (extra: Record<string, unknown>, code: string, field: string) => {
      const reply = await c.request({ type: "conversation.create", ...extra }, "conversation.created");
      expect(reply.type).toBe("error");
      const error = (reply as ServerMessageOf<"error">).error;
      expect(error.code).toBe(code);
      expect(error.message.startsWith(`${field}:`)).toBe(true);
    };
    await refused({ agent_id: "gamma" }, "bad_request", "agent_id");
    await refused({ workspace_id: "nowhere" }, "bad_request", "workspace_id");
    await refused({ agent_id: "beta", workspace_id: "notes" }, "bad_request", "agent_id");
    await refused({ worktree: true }, "bad_request", "worktree");
    // A worktree in a git workspace is created by the worktrees module (not wired on this branch).
    await refused({ workspace_id: "site", worktree: true }, "not_implemented", "worktree");
    expect((await list(c)).length).toBe(before);
    expect(a.sessions.length + b.sessions.length).toBe(4);
  });

  it("routes each conversation's turns to its own agent, in its own working directory", async () => {
    const { plain, repo } = directories();
    const a = namedBackend("A");
    const b = namedBackend("B");
    const ts = await serve({
      agents: [
        { id: "alpha", name: "Alpha", backend: a.backend },
        { id: "beta", name: "Beta", backend: b.backend },
      ],
      workspaces: [
        { id: "notes", name: "Notes", path: plain },
        { id: "site", name: "Site", path: repo },
      ],
    });
    const c = await connect(ts);
    // Both backends give their first session the same id: sessions are keyed by agent and id.
    const ofA = (await create(c, { agent_id: "alpha" })).conversation_id;
    const ofB = (await create(c, { agent_id: "beta", workspace_id: "site" })).conversation_id;
    expect(await answer(c, await send(c, ofB, "hi"))).toBe("answered by B");
    expect(await answer(c, await send(c, ofA, "hi"))).toBe("answered by A");
    expect(b.turns.map((t) => [t.conversationId, t.cwd])).toEqual([[ofB, repo]]);
    expect(a.turns.map((t) => [t.conversationId, t.cwd])).toEqual([[ofA, plain]]);
  });

  it("one agent's backend crashing leaves the other's run completing", async () => {
    let release: () => void = () => {};
    const hold = new Promise<void>((r) => {
      release = r;
    });
    const a = namedBackend("A", { crash: true });
    const b = namedBackend("B", { hold });
    const ts = await serve({
      agents: [
        { id: "alpha", name: "Alpha", backend: a.backend },
        { id: "beta", name: "Beta", backend: b.backend },
      ],
    });
    const c = await connect(ts);
    const ofA = (await create(c, { agent_id: "alpha" })).conversation_id;
    const ofB = (await create(c, { agent_id: "beta" })).conversation_id;
    const runB = await send(c, ofB, "long");
    const runA = await send(c, ofA, "boom");
    const failed = (await c.nextAny(
      (m) => m.type === "run.finished" && m.run_id === runA,
    )) as ServerMessageOf<"run.finished">;
    expect(failed.status).toBe("failed");
    release();
    const finished = (await c.nextAny(
      (m) => m.type === "run.finished" && m.run_id === runB,
    )) as ServerMessageOf<"run.finished">;
    expect(finished.status).toBe("completed");
  });

  it("tells workspaces connections each agent's status change, and v1 connections nothing", async () => {
    const ts = await serve({
      agents: [
        { id: "alpha", name: "Alpha", backend: createSimulatorBackend({ delayMs: 1 }) },
        { id: "beta", name: "Beta", backend: createSimulatorBackend({ delayMs: 1 }) },
      ],
    });
    const w = await connect(ts);
    const v1 = await connect(ts, []);
    await create(w, { agent_id: "beta" });
    const ready = (await w.nextAny(
      (m) => m.type === "agents.changed" && m.agent.status === "ready",
    )) as ServerMessageOf<"agents.changed">;
    expect(ready.agent).toEqual({ agent_id: "beta", name: "Beta", status: "ready" });
    const changes = w.frames.filter(
      (m) => m.type === "agents.changed",
    ) as ServerMessageOf<"agents.changed">[];
    expect(changes.map((m) => [m.agent.agent_id, m.agent.status])).toEqual([
      ["beta", "starting"],
      ["beta", "ready"],
    ]);
    expect((await w.ok({ type: "agents.list" }, "agents.snapshot")).agents.map((a) => a.status)).toEqual([
      "idle",
      "ready",
    ]);
    await v1.ping();
    expect(v1.frames.some((m) => m.type === "agents.changed")).toBe(false);
    await v1.expectError({ type: "agents.list" }, "unknown_type", "agents.list on a v1 connection");
  });

  it("adds agent_id, workspace_id and branch to entries on workspaces connections; v1 gets v1 byte for byte", async () => {
    const { plain, repo } = directories();
    const ts = await serve({
      agents: [
        { id: "alpha", name: "Alpha", backend: createSimulatorBackend({ delayMs: 1 }) },
        { id: "beta", name: "Beta", backend: createSimulatorBackend({ delayMs: 1 }) },
      ],
      workspaces: [
        { id: "notes", name: "Notes", path: plain },
        { id: "site", name: "Site", path: repo },
      ],
    });
    const w = await connect(ts);
    const v1 = await connect(ts, []);
    const created = await create(w, { agent_id: "beta", workspace_id: "site", name: "Beta chat" });
    const id = created.conversation_id;
    const updated = (await v1.nextAny(
      (m) => m.type === "conversation.updated" && m.conversation_id === id,
    )) as ServerMessage;
    const v1Raw = v1.raw.find((r) => r.includes('"conversation.updated"'));
    expect(v1Raw).toBe(
      JSON.stringify({ type: "conversation.updated", conversation_id: id, name: "Beta chat" }),
    );
    expect(updated).toEqual({ type: "conversation.updated", conversation_id: id, name: "Beta chat" });
    const wUpdated = (await w.nextAny(
      (m) => m.type === "conversation.updated" && m.conversation_id === id,
    )) as ServerMessageOf<"conversation.updated">;
    expect([wUpdated.agent_id, wUpdated.workspace_id, wUpdated.branch]).toEqual(["beta", "site", null]);
    await create(w, { name: "Alpha chat" });

    const entries = await list(w);
    expect(entries.map((e) => [e.name, e.agent_id, e.workspace_id, e.branch])).toEqual([
      ["Alpha chat", "alpha", "notes", null],
      ["Beta chat", "beta", "site", null],
    ]);
    expect((await list(w, { agent_id: "beta" })).map((e) => e.name)).toEqual(["Beta chat"]);
    expect((await list(w, { workspace_id: "notes" })).map((e) => e.name)).toEqual(["Alpha chat"]);
    expect(await list(w, { agent_id: "gamma" })).toEqual([]); // an unknown id lists nothing
    // A v1 connection: v1 entries, and the workspaces fields of its requests ignored.
    const v1Entries = await list(v1, { agent_id: "beta" });
    expect(v1Entries.map((e) => Object.keys(e).sort())).toEqual([
      ["conversation_id", "last_active", "name", "session_id", "source"],
      ["conversation_id", "last_active", "name", "session_id", "source"],
    ]);
    const v1Created = await create(v1, { agent_id: "beta", workspace_id: "site" });
    expect(Object.keys(v1Created).sort()).toEqual(["conversation_id", "name", "request_id", "type"]);
    const placedV1 = (await list(w)).find((e) => e.conversation_id === v1Created.conversation_id);
    expect([placedV1?.agent_id, placedV1?.workspace_id]).toEqual(["alpha", "notes"]);
  });

  it("keeps global model and reasoning settings per agent; a non-default agent's change reaches workspaces connections only", async () => {
    const ts = await serve({
      agents: [
        { id: "alpha", name: "Alpha", backend: createSimulatorBackend({ delayMs: 1 }) },
        { id: "beta", name: "Beta", backend: createSimulatorBackend({ delayMs: 1 }) },
      ],
    });
    const w = await connect(ts);
    const v1 = await connect(ts, []);
    const set = await w.ok({ type: "model.set", model: "local/tiny-1b", agent_id: "beta" }, "model.changed");
    expect(set).toMatchObject({ model: "local/tiny-1b", scope: "global", agent_id: "beta" });
    const current = (agent?: string) =>
      w.ok({ type: "models.current", ...(agent ? { agent_id: agent } : {}) }, "model.current");
    expect((await current("beta")).model).toBe("local/tiny-1b");
    expect((await current()).model).not.toBe("local/tiny-1b");
    // The default agent's global change reaches everyone; workspaces connections learn whose it is.
    await w.ok({ type: "reasoning.set", effort: "low" }, "reasoning.changed");
    const v1Changed = (await v1.nextAny((m) => m.type === "reasoning.changed")) as ServerMessage;
    expect(v1Changed).toEqual({ type: "reasoning.changed", effort: "low", scope: "global" });
    const wChanged = (await w.nextAny(
      (m) => m.type === "reasoning.changed" && !("request_id" in m),
    )) as ServerMessageOf<"reasoning.changed">;
    expect(wChanged.agent_id).toBe("alpha");
    await v1.ping();
    expect(v1.frames.filter((m) => m.type === "model.changed")).toEqual([]);

    const ofAlpha = (await create(w, { agent_id: "alpha" })).conversation_id;
    await w.expectError(
      { type: "models.list", conversation_id: ofAlpha, agent_id: "beta" },
      "bad_request",
      "a conversation of another agent",
    );
    await w.expectError({ type: "models.list", agent_id: "gamma" }, "bad_request", "an unknown agent");
    // The conversation's settings fall back to its own agent's global ones.
    const ofBeta = (await create(w, { agent_id: "beta" })).conversation_id;
    expect((await w.ok({ type: "models.current", conversation_id: ofBeta }, "model.current")).model).toBe(
      "local/tiny-1b",
    );
  });
});

describe("workspaces: sessions keyed by agent and id", () => {
  /** A backend listing one session `shared` ("started at the desk"), and deleting nothing. */
  function listing(failStart = false): AgentBackend {
    return {
      name: "scripted",
      capabilities: { ...NO_CAPABILITIES, listSessions: true },
      async start() {},
      ...(failStart
        ? {
            async ensureReady() {
              throw new Error("cannot start");
            },
          }
        : {}),
      async createSession(conversationId) {
        return { sessionId: `own-${conversationId}` };
      },
      async listSessions() {
        return [{ sessionId: "shared", title: "At the desk" }];
      },
      async prompt(): Promise<TurnResult> {
        return { status: "completed" };
      },
      async close() {},
    };
  }

  it("imports the same session id of two agents as two conversations; deleting one keeps the other", async () => {
    const ts = await serve({
      agents: [
        { id: "alpha", name: "Alpha", backend: listing() },
        { id: "beta", name: "Beta", backend: listing() },
      ],
    });
    const c = await connect(ts);
    const desk = async () => (await list(c)).filter((e) => e.session_id === "shared").map((e) => e.agent_id);
    // Beta has not run yet: only the default agent's session is imported.
    expect(await desk()).toEqual(["alpha"]);
    await create(c, { agent_id: "beta" });
    expect((await desk()).sort()).toEqual(["alpha", "beta"]);
    const ofAlpha = (await list(c)).find((e) => e.session_id === "shared" && e.agent_id === "alpha")!;
    await c.ok(
      { type: "conversation.delete", conversation_id: ofAlpha.conversation_id },
      "conversation.deleted",
    );
    // Alpha's tombstone keeps its session out; beta's stays.
    expect(await desk()).toEqual(["beta"]);
  });

  it("an agent that cannot start is failed (agents.changed), and the others work on", async () => {
    const ts = await serve({
      agents: [
        { id: "alpha", name: "Alpha", backend: listing() },
        { id: "broken", name: "Broken", backend: listing(true) },
      ],
    });
    const c = await connect(ts);
    await c.request({ type: "conversation.create", agent_id: "broken" }, "conversation.created");
    const failed = (await c.nextAny(
      (m) => m.type === "agents.changed" && m.agent.status === "failed",
    )) as ServerMessageOf<"agents.changed">;
    expect(failed.agent.agent_id).toBe("broken");
    const ofAlpha = (await create(c)).conversation_id;
    const runId = await send(c, ofAlpha, "hi");
    const done = (await c.nextAny(
      (m) => m.type === "run.finished" && m.run_id === runId,
    )) as ServerMessageOf<"run.finished">;
    expect(done.status).toBe("completed");
  });
});

describe("workspaces: options", () => {
  const base = () => ({ secret: SECRET, dataDir: temp(), agentTools: { enabled: false } });
  const sim = () => createSimulatorBackend();

  it("refuses agents together with agent, duplicate ids, unknown agents and bad paths, naming the option", () => {
    const dir = temp();
    const refuse = (options: Record<string, unknown>, words: string) =>
      expect(() => createPhebyServer({ ...base(), ...options })).toThrow(words);
    refuse(
      { agent: sim(), agents: [{ id: "a", name: "A", backend: sim() }] },
      "agents must not be given together with agent",
    );
    refuse(
      {
        agents: [
          { id: "a", name: "A", backend: sim() },
          { id: "a", name: "B", backend: sim() },
        ],
      },
      'agents.1.id duplicates the id "a"',
    );
    refuse({ agents: [{ id: "Bad!", name: "A", backend: sim() }] }, "agents.0.id must be 1-32 characters");
    refuse(
      {
        agents: [{ id: "a", name: "A", backend: sim() }],
        workspaces: [{ id: "w", name: "W", path: dir, agents: ["b"] }],
      },
      'workspaces.0.agents.0 names an unknown agent "b"',
    );
    refuse(
      {
        workspaces: [
          { id: "w", name: "W", path: dir },
          { id: "w", name: "X", path: dir },
        ],
      },
      'workspaces.1.id duplicates the id "w"',
    );
    refuse(
      { workspaces: [{ id: "w", name: "W", path: "relative/dir" }] },
      "workspaces.0.path must be an absolute path",
    );
    refuse(
      { workspaces: [{ id: "w", name: "W", path: join(dir, "missing") }] },
      "must be an existing directory",
    );
    refuse({ workdir: join(dir, "missing") }, "workdir must be an existing directory");
  });

  it("takes LIMITS' agents, workspaces, id and name lengths, and refuses one more", async () => {
    const agents = (n: number, id = (i: number) => `a${i}`, name = (i: number) => `A${i}`) =>
      Array.from({ length: n }, (_, i) => ({ id: id(i), name: name(i), backend: sim() }));
    const dir = temp();
    const workspaces = (n: number) =>
      Array.from({ length: n }, (_, i) => ({ id: `w${i}`, name: `W${i}`, path: dir }));
    const accepts = async (options: Record<string, unknown>) => {
      const server = createPhebyServer({ ...base(), ...options });
      await server.close();
    };
    await accepts({ agents: agents(LIMITS.agents) });
    expect(() => createPhebyServer({ ...base(), agents: agents(LIMITS.agents + 1) })).toThrow(
      `agents must list at most ${LIMITS.agents} agents`,
    );
    await accepts({ workspaces: workspaces(LIMITS.workspaces) });
    expect(() => createPhebyServer({ ...base(), workspaces: workspaces(LIMITS.workspaces + 1) })).toThrow(
      `workspaces must list at most ${LIMITS.workspaces} workspaces`,
    );
    const idOf = (chars: number) => () => "a".repeat(chars);
    await accepts({ agents: agents(1, idOf(LIMITS.workspaceIdChars)) });
    expect(() =>
      createPhebyServer({ ...base(), agents: agents(1, idOf(LIMITS.workspaceIdChars + 1)) }),
    ).toThrow("agents.0.id must be 1-32 characters");
    const nameOf = (chars: number) => () => "n".repeat(chars);
    await accepts({ agents: agents(1, undefined, nameOf(LIMITS.workspaceNameChars)) });
    expect(() =>
      createPhebyServer({ ...base(), agents: agents(1, undefined, nameOf(LIMITS.workspaceNameChars + 1)) }),
    ).toThrow("agents.0.name must be at most 200 characters");
  });

  it("a single-agent server has one agent and one workspace `default`", async () => {
    const ts = await serve({});
    const c = await connect(ts);
    expect((await c.ok({ type: "agents.list" }, "agents.snapshot")).agents.map((a) => a.agent_id)).toEqual([
      "default",
    ]);
    const ws = (await c.ok({ type: "workspaces.list" }, "workspaces.snapshot")).workspaces;
    expect(ws.map((w) => [w.workspace_id, w.agents])).toEqual([["default", ["default"]]]);
    const created = await create(c);
    expect([created.agent_id, created.workspace_id, created.branch]).toEqual(["default", "default", null]);
  });
});
