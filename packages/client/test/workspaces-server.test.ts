// The `workspaces` and `changes` extensions' typed API against the real server on 127.0.0.1:0 (imported
// from its build by path, see in-memory.test.ts): two simulator agents and two workspaces, `repo` a real
// git repository in a temp dir and `notes` a plain directory. Placement (agents, workspaces, a real
// worktree on branch pheby/<8>, list filters, each agent's global settings, agents.changed), then
// `/sim changes` in the simulator's own repository (the simulator never writes into a workspace:
// docs/simulator.md) through listChanges, diffChange and changes.changed. A connection without the two
// features keeps v1.
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decodeServerFrame, FEATURE_CHANGES, FEATURE_WORKSPACES, type ServerMessage } from "@pheby/protocol";
import { fixtureGit as git } from "@pheby/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPhebyServer, createSimulatorBackend, type PhebyServer } from "../../server/dist/index.js";
import { DEFAULT_FEATURES, type InvalidFrame, PhebyClient } from "../src/index.js";

const SECRET = "workspaces-server-secret-0123456789";
let root: string;
let repo: string;
let notes: string;
let worktrees: string;
let server: PhebyServer;
let url: string;
const clients: PhebyClient[] = [];
const invalid: InvalidFrame[] = [];
/** Every frame any client received, to check none names a server path. */
const raw: string[] = [];

async function connect(features?: readonly string[]): Promise<PhebyClient> {
  const client = new PhebyClient({
    url,
    secret: SECRET,
    pingIntervalMs: 0,
    ...(features ? { features } : {}),
  });
  client.onInvalidFrame((frame) => invalid.push(frame));
  client.on("*", (m) => raw.push(JSON.stringify(m)));
  clients.push(client);
  await client.connect();
  return client;
}

beforeAll(async () => {
  root = realpathSync(mkdtempSync(join(tmpdir(), "pheby-client-workspaces-")));
  repo = join(root, "repo");
  notes = join(root, "notes");
  worktrees = join(root, "worktrees");
  mkdirSync(repo);
  mkdirSync(notes);
  git(repo, "init", "-q", "-b", "main");
  writeFileSync(join(repo, "README.md"), "repo\n");
  git(repo, "add", "-A");
  git(repo, "commit", "-q", "-m", "initial");
  server = createPhebyServer({
    secret: SECRET,
    dataDir: join(root, "data"),
    agents: [
      { id: "sim-a", name: "First", backend: createSimulatorBackend({ delayMs: 1 }) },
      { id: "sim-b", name: "Second", backend: createSimulatorBackend({ delayMs: 1 }) },
    ],
    workspaces: [
      { id: "repo", name: "Repository", path: repo },
      { id: "notes", name: "Notes", path: notes, agents: ["sim-b"] },
    ],
    worktreesDir: worktrees,
  });
  const { port } = await server.listen({ port: 0, host: "127.0.0.1" });
  url = `ws://127.0.0.1:${port}/ws`;
});

afterAll(async () => {
  for (const client of clients) client.close();
  await server?.close();
  if (root) rmSync(root, { recursive: true, force: true });
  // The server never sent a frame @pheby/protocol rejects, nor a path of its own.
  expect(invalid).toEqual([]);
  for (const frame of raw) {
    expect(frame).not.toContain(root);
  }
});

describe("workspaces against the real server", () => {
  it("asks for both by default; listAgents and listWorkspaces; an agent's first use reaches on('agents.changed')", async () => {
    const client = await connect();
    expect(client.features).toEqual(expect.arrayContaining([FEATURE_WORKSPACES, FEATURE_CHANGES]));
    expect(await client.listWorkspaces()).toEqual([
      { workspace_id: "repo", name: "Repository", agents: ["sim-a", "sim-b"], git: true },
      { workspace_id: "notes", name: "Notes", agents: ["sim-b"], git: false },
    ]);
    const before = await client.listAgents();
    expect(before.map((a) => [a.agent_id, a.name])).toEqual([
      ["sim-a", "First"],
      ["sim-b", "Second"],
    ]);
    // Nothing used sim-b yet (the default agent may have started for the catalogue).
    expect(before[1]!.status).toBe("idle");
    const ready = client.next(
      "agents.changed",
      (m) => m.agent.agent_id === "sim-b" && m.agent.status === "ready",
    );
    // With only the workspace: its first agent, sim-b.
    const created = await client.createConversation({ name: "notes", workspaceId: "notes" });
    expect(created).toMatchObject({ agent_id: "sim-b", workspace_id: "notes", branch: null });
    expect((await ready).agent).toEqual({ agent_id: "sim-b", name: "Second", status: "ready" });
    expect((await client.listAgents())[1]).toEqual({ agent_id: "sim-b", name: "Second", status: "ready" });
  });

  it("createConversation with agentId, workspaceId and worktree makes a real worktree on branch pheby/<8>", async () => {
    const client = await connect();
    const created = await client.createConversation({
      name: "in a worktree",
      agentId: "sim-a",
      workspaceId: "repo",
      worktree: true,
    });
    const id = created.conversation_id;
    expect(created).toMatchObject({
      agent_id: "sim-a",
      workspace_id: "repo",
      branch: `pheby/${id.slice(0, 8)}`,
    });
    // The worktree is really there, on that branch, with the workspace's committed files.
    const tree = join(worktrees, id);
    expect(readFileSync(join(tree, "README.md"), "utf8")).toBe("repo\n");
    expect(git(tree, "symbolic-ref", "--short", "HEAD").trim()).toBe(created.branch);
    expect(git(repo, "branch", "--list", created.branch!)).toContain(created.branch!);
    // The simulator says where it runs: that agent, workspace and branch, at the worktree's root.
    const reply = await answer(client, id, "/sim where");
    expect(reply).toBe(
      `This conversation runs with agent sim-a in workspace repo, on branch ${created.branch} of its own worktree, in the directory . of its git working tree.`,
    );
  });

  it("refuses an unknown id, an agent not allowed there and a worktree outside git with bad_request naming the field", async () => {
    const client = await connect();
    const count = (await client.listConversations()).length;
    for (const [options, field] of [
      [{ agentId: "nobody" }, "agent_id"],
      [{ workspaceId: "nowhere" }, "workspace_id"],
      [{ agentId: "sim-a", workspaceId: "notes" }, "agent_id"],
      [{ workspaceId: "notes", worktree: true }, "worktree"],
    ] as const) {
      await expect(client.createConversation(options), field).rejects.toMatchObject({
        code: "bad_request",
        message: expect.stringMatching(new RegExp(`^${field}\\b`)),
      });
    }
    expect((await client.listConversations()).length).toBe(count);
  });

  it("listConversations filters by agent and by workspace; every entry carries agent, workspace and branch", async () => {
    const client = await connect();
    const a = await client.createConversation({ agentId: "sim-a" });
    const b = await client.createConversation({ agentId: "sim-b", workspaceId: "repo" });
    const all = await client.listConversations();
    for (const entry of all) {
      expect(entry).toHaveProperty("agent_id");
      expect(entry).toHaveProperty("workspace_id");
      expect(entry).toHaveProperty("branch");
    }
    expect(all.find((c) => c.conversation_id === a.conversation_id)).toMatchObject({
      agent_id: "sim-a",
      workspace_id: "repo",
      branch: null,
    });
    const ofB = await client.listConversations({ agentId: "sim-b" });
    expect(ofB.map((c) => c.agent_id)).not.toContain("sim-a");
    expect(ofB.map((c) => c.conversation_id)).toContain(b.conversation_id);
    const inNotes = await client.listConversations({ workspaceId: "notes" });
    expect(inNotes.length).toBeGreaterThan(0);
    expect(inNotes.every((c) => c.workspace_id === "notes")).toBe(true);
    const both = await client.listConversations({ agentId: "sim-b", workspaceId: "repo" });
    expect(both.map((c) => c.conversation_id)).toEqual([b.conversation_id]);
  });

  it("models and reasoning take agent_id: each agent's global scope is its own", async () => {
    const client = await connect();
    const other = await connect();
    const models = await client.listModels({ agentId: "sim-b" });
    expect(models.providers.map((p) => p.slug)).toEqual(["simcloud", "simlocal"]);
    const heard = other.next("model.changed", (m) => m.scope === "global" && m.agent_id === "sim-b");
    const set = await client.setModel("sim/pro-2", { agentId: "sim-b", provider: "simcloud" });
    expect(set).toMatchObject({ model: "sim/pro-2", scope: "global", agent_id: "sim-b" });
    expect((await heard).request_id).toBeUndefined();
    expect(await client.currentModel({ agentId: "sim-b" })).toMatchObject({
      model: "sim/pro-2",
      scope: "global",
    });
    // The default agent's global model did not move.
    expect((await client.currentModel()).model).not.toBe("sim/pro-2");
    expect(await client.setReasoning("high", { agentId: "sim-b" })).toMatchObject({
      effort: "high",
      scope: "global",
      agent_id: "sim-b",
    });
    expect((await client.currentReasoning({ agentId: "sim-b" })).effort).toBe("high");
    expect((await client.currentReasoning({ agentId: "sim-a" })).effort).not.toBe("high");
    // A conversation of sim-a with agent_id sim-b: bad_request naming agent_id.
    const { conversation_id } = await client.createConversation({ agentId: "sim-a" });
    await expect(
      client.listModels({ conversationId: conversation_id, agentId: "sim-b" }),
    ).rejects.toMatchObject({
      code: "bad_request",
      message: expect.stringMatching(/^agent_id\b/),
    });
  });
});

/** Send `text` and resolve with the run's final answer. */
async function answer(client: PhebyClient, conversationId: string, text: string): Promise<string> {
  let reply = "";
  for await (const frame of client.chat(conversationId, text)) {
    if (frame.type === "message.complete") reply = frame.text;
    if (frame.type === "run.finished") expect(frame.status).toBe("completed");
  }
  return reply;
}

describe("changes against the real server (/sim changes)", () => {
  it("listChanges is not_implemented before the simulator's repository exists; after /sim changes it lists the three files, diffChange their patches, on('changes.changed') the totals", async () => {
    const client = await connect();
    const { conversation_id } = await client.createConversation({ name: "changes", agentId: "sim-a" });
    await expect(client.listChanges(conversation_id)).rejects.toMatchObject({ code: "not_implemented" });
    const changed = client.next("changes.changed", (m) => m.conversation_id === conversation_id);
    expect(await answer(client, conversation_id, "/sim changes")).toBe(
      "I edited src/app.ts, created src/feature.ts and deleted docs/old-notes.md.",
    );
    expect(await changed).toMatchObject({ file_count: 3, additions: 5, deletions: 2 });
    const snapshot = await client.listChanges(conversation_id);
    expect(snapshot.base.commit).toMatch(/^[0-9a-f]{40}$/);
    expect(snapshot.truncated).toBe(false);
    expect(snapshot.files.map((f) => [f.path, f.status, f.type, f.additions, f.deletions, f.binary])).toEqual(
      [
        ["docs/old-notes.md", "deleted", "file", 0, 1, false],
        ["src/app.ts", "modified", "file", 2, 1, false],
        ["src/feature.ts", "added", "file", 3, 0, false],
      ],
    );
    const app = snapshot.files[1]!;
    const patch = await client.diffChange(conversation_id, app.file_id);
    expect(patch).toMatchObject({
      conversation_id,
      file_id: app.file_id,
      path: "src/app.ts",
      truncated: false,
    });
    expect(patch.patch).toMatch(/^--- a\/src\/app\.ts$/m);
    expect(patch.patch).toMatch(/^@@ /m);
    await expect(client.diffChange(conversation_id, "c-0000000000000000")).rejects.toMatchObject({
      code: "not_found",
    });
    // The simulator wrote only in its own repository: the workspace is untouched.
    expect(git(repo, "status", "--porcelain")).toBe("");
    expect(existsSync(join(repo, "src"))).toBe(false);
  });
});

describe("a connection without workspaces and changes", () => {
  it("gets unknown_type for their requests, and v1 entries: their fields on a v1 request are ignored", async () => {
    const plain = DEFAULT_FEATURES.filter((f) => f !== FEATURE_WORKSPACES && f !== FEATURE_CHANGES);
    const frames: ServerMessage[] = [];
    const client = await connect(plain);
    client.on("*", (m) => frames.push(m));
    expect(client.features).not.toContain(FEATURE_WORKSPACES);
    expect(client.features).not.toContain(FEATURE_CHANGES);
    await expect(client.listAgents()).rejects.toMatchObject({ code: "unknown_type" });
    await expect(client.listWorkspaces()).rejects.toMatchObject({ code: "unknown_type" });
    const created = await client.createConversation({ name: "here", agentId: "nobody", worktree: true });
    expect(created).not.toHaveProperty("agent_id");
    await expect(client.listChanges(created.conversation_id)).rejects.toMatchObject({ code: "unknown_type" });
    const listed = await client.listConversations({ agentId: "nobody" });
    expect(listed.map((c) => c.conversation_id)).toContain(created.conversation_id);
    for (const entry of listed) expect(entry).not.toHaveProperty("workspace_id");
    for (const frame of frames) {
      expect(decodeServerFrame(JSON.stringify(frame), { features: client.features }).ok).toBe(true);
    }
  });
});
