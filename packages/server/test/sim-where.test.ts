// `/sim where` over real sockets: two simulator agents, a workspace that is a subfolder of a real git
// repository and one that is no repository. The answer names the conversation's agent, workspace and
// worktree branch, and its working directory relative to the path base; no server path in any frame.
import { rmSync } from "node:fs";
import { join } from "node:path";
import { FEATURE_WORKSPACES } from "@pheby/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSimulatorBackend } from "../src/index.js";
import { repoWith, tempDir } from "./git-fixtures.js";
import { helloWith, type RawClient, startServer, type TestServer } from "./helpers.js";

let ts: TestServer;
let c: RawClient;
let repo: string;
let plain: string;
let worktrees: string;

beforeAll(async () => {
  repo = repoWith({ "site/index.html": "<p>\n" });
  plain = tempDir("pheby-where-plain-");
  worktrees = tempDir("pheby-where-wt-");
  ts = await startServer({
    agents: [
      { id: "sim-a", name: "First", backend: createSimulatorBackend({ delayMs: 1 }) },
      { id: "sim-b", name: "Second", backend: createSimulatorBackend({ delayMs: 1 }) },
    ],
    workspaces: [
      { id: "site", name: "Site", path: join(repo, "site") },
      { id: "notes", name: "Notes", path: plain, agents: ["sim-b"] },
    ],
    worktreesDir: join(worktrees, "wt"),
  });
  c = await helloWith(ts, [FEATURE_WORKSPACES]);
});

afterAll(async () => {
  c?.close();
  await ts?.cleanup();
  for (const dir of [repo, plain, worktrees]) if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The text of the answer to `/sim where` in a new conversation created with `create`'s fields. */
async function where(create: Record<string, unknown>): Promise<{ id: string; text: string }> {
  const created = await c.ok({ type: "conversation.create", ...create }, "conversation.created");
  const id = created.conversation_id;
  const { run_id } = await c.ok(
    { type: "chat.send", conversation_id: id, text: "/sim where" },
    "run.accepted",
  );
  const complete = await c.next("message.complete", (m) => m.message_id === `draft-${run_id}`);
  const finished = await c.nextAny((m) => m.type === "run.finished" && m.run_id === run_id);
  expect(finished).toMatchObject({ status: "completed" });
  return { id, text: complete.text };
}

describe("/sim where", () => {
  it("names the default agent and workspace, no branch, and the workspace's subfolder of its repository", async () => {
    const { text } = await where({});
    expect(text).toBe(
      "This conversation runs with agent sim-a in workspace site, on no branch of its own (no worktree), in the directory site of its git working tree.",
    );
  });

  it("in a worktree: its branch pheby/<8>, and the same subfolder inside the worktree", async () => {
    const { id, text } = await where({ agent_id: "sim-b", workspace_id: "site", worktree: true });
    expect(text).toBe(
      `This conversation runs with agent sim-b in workspace site, on branch pheby/${id.slice(0, 8)} of its own worktree, in the directory site of its git working tree.`,
    );
  });

  it("outside git: the workspace's own directory, said to be no repository", async () => {
    const { text } = await where({ workspace_id: "notes" });
    expect(text).toBe(
      "This conversation runs with agent sim-b in workspace notes, on no branch of its own (no worktree), in the directory . of its workspace (not a git repository).",
    );
  });

  it("no frame carried a path of the server", () => {
    for (const raw of c.raw) {
      expect(raw).not.toContain(repo);
      expect(raw).not.toContain(plain);
      expect(raw).not.toContain(worktrees);
    }
  });
});
