// conversation.create with `worktree: true` and conversation.delete over real sockets and a real git
// repository: the conversation's session works in its own worktree (on branch pheby/<id>, the same
// subfolder as its workspace), its entries carry the branch, and deleting it removes the worktree
// only when clean, the branch kept. No server path reaches the client.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { FEATURE_WORKSPACES, type ServerMessageOf } from "@pheby/protocol";
import { afterEach, describe, expect, it } from "vitest";
import type { AgentBackend, TurnResult } from "../src/index.js";
import { git, repoWith, tempDir } from "./git-fixtures.js";
import { helloWith, NO_CAPABILITIES, type RawClient, startServer, type TestServer } from "./helpers.js";

const servers: TestServer[] = [];
const clients: RawClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  for (const s of servers.splice(0)) await s.cleanup();
});

/** A backend that records each session's working directory and writes a file there on each turn. */
function writingBackend() {
  const cwds = new Map<string, string>();
  const backend: AgentBackend = {
    name: "scripted",
    capabilities: NO_CAPABILITIES,
    async start() {},
    async createSession(conversationId, o) {
      cwds.set(conversationId, o?.cwd ?? "");
      return { sessionId: `s-${conversationId}` };
    },
    async prompt(input, sink): Promise<TurnResult> {
      writeFileSync(join(input.cwd ?? "", "agent.txt"), input.text);
      sink.text("written");
      return { status: "completed" };
    },
    async close() {},
  };
  return { backend, cwds };
}

async function setup() {
  const repo = repoWith({ "site/index.html": "<p>\n", "README.md": "r\n" });
  const plain = tempDir("pheby-plain-");
  const empty = tempDir("pheby-empty-");
  git(empty, "init", "-q");
  const worktreesDir = join(tempDir("pheby-wt-"), "worktrees");
  const agent = writingBackend();
  const ts = await startServer({
    agents: [{ id: "alpha", name: "Alpha", backend: agent.backend }],
    workspaces: [
      { id: "site", name: "Site", path: join(repo, "site") },
      { id: "notes", name: "Notes", path: plain },
      { id: "empty", name: "Empty", path: empty },
    ],
    worktreesDir,
  });
  servers.push(ts);
  const c = await helloWith(ts, [FEATURE_WORKSPACES]);
  clients.push(c);
  return { repo, plain, worktreesDir, agent, c };
}

describe("conversation.create with worktree: true", () => {
  it("works in a worktree of its own on branch pheby/<id>, in its workspace's subfolder; no path reaches the client", async () => {
    const { repo, worktreesDir, agent, c } = await setup();
    const created = await c.ok(
      { type: "conversation.create", workspace_id: "site", worktree: true },
      "conversation.created",
    );
    const id = created.conversation_id;
    expect(created).toMatchObject({
      agent_id: "alpha",
      workspace_id: "site",
      branch: `pheby/${id.slice(0, 8)}`,
    });
    const root = join(worktreesDir, id);
    expect(agent.cwds.get(id)).toBe(join(root, "site"));
    // The agent's writes land in the worktree, not in the workspace.
    const runId = (await c.ok({ type: "chat.send", conversation_id: id, text: "hello" }, "run.accepted"))
      .run_id;
    await c.nextAny((m) => m.type === "run.finished" && m.run_id === runId);
    expect(readFileSync(join(root, "site", "agent.txt"), "utf8")).toBe("hello");
    expect(existsSync(join(repo, "site", "agent.txt"))).toBe(false);
    // The list shows the branch too.
    const listed = await c.ok({ type: "conversation.list" }, "conversation.snapshot");
    expect(listed.conversations.find((e) => e.conversation_id === id)).toMatchObject({
      branch: created.branch,
    });
    for (const raw of c.raw) {
      expect(raw).not.toContain(repo);
      expect(raw).not.toContain(worktreesDir);
    }
  });

  it("refuses a workspace outside git or without a commit (bad_request naming worktree), making nothing", async () => {
    const { worktreesDir, agent, c } = await setup();
    for (const workspace_id of ["notes", "empty"]) {
      const reply = await c.request(
        { type: "conversation.create", workspace_id, worktree: true },
        "conversation.created",
      );
      expect(reply.type).toBe("error");
      const { error } = reply as ServerMessageOf<"error">;
      expect(error.code).toBe("bad_request");
      expect(error.message.startsWith("worktree:")).toBe(true);
      expect(error.message).not.toContain("/");
    }
    expect(agent.cwds.size).toBe(0);
    expect(
      existsSync(worktreesDir) ? execFileSync("ls", ["-A", worktreesDir], { encoding: "utf8" }) : "",
    ).toBe("");
  });
});

describe("conversation.delete of a worktree conversation", () => {
  it("removes a clean worktree and keeps its branch; keeps one with uncommitted changes", async () => {
    const { repo, worktreesDir, c } = await setup();
    const make = async () =>
      await c.ok(
        { type: "conversation.create", workspace_id: "site", worktree: true },
        "conversation.created",
      );
    const clean = await make();
    const dirty = await make();
    mkdirSync(join(worktreesDir, dirty.conversation_id, "site", "wip"));
    writeFileSync(
      join(worktreesDir, dirty.conversation_id, "site", "wip", "notes.txt"),
      "work in progress\n",
    );
    for (const conversation_id of [clean.conversation_id, dirty.conversation_id])
      await c.ok({ type: "conversation.delete", conversation_id }, "conversation.deleted");
    expect(existsSync(join(worktreesDir, clean.conversation_id))).toBe(false);
    expect(readFileSync(join(worktreesDir, dirty.conversation_id, "site", "wip", "notes.txt"), "utf8")).toBe(
      "work in progress\n",
    );
    const branches = git(repo, "branch", "--list", "pheby/*");
    expect(branches).toContain(clean.branch!);
    expect(branches).toContain(dirty.branch!);
  });
});
