/**
 * Several real agents on one Pheby server (the `workspaces` extension), through a real server and
 * `@pheby/client`: Qwen Code and OpenCode configured at once over three workspaces, each
 * conversation answered by its own agent in its own directory (the fake model has the agent run
 * `pwd && ls`); a SIGKILL of one agent's process leaves the other's run completing; a worktree
 * conversation's agent writes into its worktree, never into the workspace; and a session started with
 * each agent's own CLI at the desk (`qwen -p`, `opencode run`) is found through `conversation.list` as a
 * conversation of that agent and workspace, and its history opened.
 * Every frame is validated against `@pheby/protocol` (test/setup.ts).
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  FEATURE_CHANGES,
  FEATURE_WORKSPACES,
  type ServerMessage,
  type ServerMessageOf,
} from "@pheby/protocol";
import { answerOf, messageIdOf } from "@pheby/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeLlm, startFakeLlm } from "../acp/fake-llm.js";
import { framesOf, type PhebyAgents, startPhebyAgents } from "../acp/pheby.js";
import { expectNoServerPaths } from "./activity.js";
import { AGENT_BINS, HELLO, skipReason, tempHome } from "./agents.js";
import {
  approveEverything,
  cwdOf,
  git,
  gitWorkspace,
  lastPid,
  multiAgentScript,
  opencodeEnv,
  opencodeOptions,
  qwenModelEnv,
  qwenOptions,
  recordingPid,
  runCli,
  SLOW_PROMPT,
  TOOL_SAID,
  tempWorkspace,
  toolResults,
  WHERE_PROMPT,
} from "./multi-agent.js";

const reason = skipReason("qwen") ?? skipReason("opencode");
if (reason) console.info(reason);

type Entry = ServerMessageOf<"conversation.created">;

describe.skipIf(reason !== null)(
  "Qwen Code and OpenCode side by side (workspaces)",
  { timeout: 240_000 },
  () => {
    let llm: FakeLlm;
    let p: PhebyAgents;
    /** alpha: Qwen's first workspace; beta: OpenCode's first; repo: a git repository (worktrees, Qwen). */
    const dirs = {} as { alpha: string; beta: string; repo: string; pids: string };
    const pidFile = { qwen: "", opencode: "" };
    let qwenHome: string;
    let opencodeHome: string;

    beforeAll(async () => {
      llm = await startFakeLlm(multiAgentScript());
      dirs.alpha = tempWorkspace("alpha");
      dirs.beta = tempWorkspace("beta");
      writeFileSync(join(dirs.alpha, "alpha.marker"), "alpha\n");
      writeFileSync(join(dirs.beta, "beta.marker"), "beta\n");
      dirs.repo = gitWorkspace("repo", { "README.md": "# repo\n" });
      dirs.pids = tempWorkspace("pids");
      pidFile.qwen = join(dirs.pids, "qwen");
      pidFile.opencode = join(dirs.pids, "opencode");
      qwenHome = tempHome("qwen");
      opencodeHome = tempHome("opencode");
      // As pheby-server does without an agent `cwd`: each agent process starts in its first workspace.
      p = await startPhebyAgents(
        [
          {
            id: "qwen",
            name: "Qwen Code",
            options: recordingPid(qwenOptions(llm, dirs.alpha, qwenHome), pidFile.qwen),
          },
          {
            id: "opencode",
            name: "OpenCode",
            options: recordingPid(opencodeOptions(llm, dirs.beta, opencodeHome), pidFile.opencode),
          },
        ],
        [
          { id: "alpha", name: "Alpha", path: dirs.alpha, agents: ["qwen", "opencode"] },
          { id: "beta", name: "Beta", path: dirs.beta, agents: ["opencode", "qwen"] },
          { id: "repo", name: "Repository", path: dirs.repo, agents: ["qwen"] },
        ],
        { features: [FEATURE_WORKSPACES, FEATURE_CHANGES] },
      );
      approveEverything(p);
    }, 120_000);

    afterAll(async () => {
      const worktrees = p ? `${p.ts.dataDir}-worktrees` : undefined; // the server's default, beside it
      await p?.close();
      await llm?.close();
      for (const dir of [dirs.alpha, dirs.beta, dirs.repo, dirs.pids, worktrees, qwenHome, opencodeHome])
        if (dir) rmSync(dir, { recursive: true, force: true });
    });

    /** Create a conversation placed by `fields`; returns its entry as the server shows it. */
    async function create(fields: {
      agent_id?: string;
      workspace_id?: string;
      worktree?: boolean;
    }): Promise<Entry> {
      return p.client.request({ type: "conversation.create", ...fields });
    }

    /** Run {@link WHERE_PROMPT} in `id`: the run, its shell tool's wire output and what the agent's shell really printed. */
    async function where(id: string) {
      const seen = toolResults(llm).length;
      const run = await p.chat(id, WHERE_PROMPT, 120_000);
      expect(run.finished.status, JSON.stringify(run.finished)).toBe("completed");
      const events = framesOf(p.frames, "tool.event").filter((e) => e.run_id === run.runId);
      const wire = JSON.stringify(events);
      const printed = toolResults(llm).slice(seen).join("\n");
      // The shell's output as the server shows it (activity): the call's latest content (OpenCode
      // streams it in a running event, Qwen Code sends it with the completed one).
      const shown = (events.filter((e) => e.content?.length).at(-1)?.content ?? [])
        .flatMap((c) => (c.type === "text" ? [c.text] : []))
        .join("\n");
      return { run, wire, printed, shown };
    }

    /** The lines of a shell's output, without Qwen Code's "Output: " label. */
    function shownLines(text: string): string[] {
      return text.split("\n").map((l) => l.replace(/^Output: /, "").trim());
    }

    /**
     * Every frame but the model's own prose (message text, the history and the inbox's previews): the fake
     * model repeats the shell's output, which names the real directory it was told.
     */
    function notProse(): ServerMessage[] {
      return p.frames
        .filter((m) => !/^message\.|^conversation\.history$/.test(m.type))
        .map((m) => JSON.parse(JSON.stringify(m, (k, v) => (k === "preview" ? undefined : v))));
    }

    it("lists both agents and the three workspaces, by id and name only", async () => {
      const agents = await p.client.request({ type: "agents.list" });
      expect(agents.agents.map((a) => [a.agent_id, a.name])).toEqual([
        ["qwen", "Qwen Code"],
        ["opencode", "OpenCode"],
      ]);
      const { workspaces } = await p.client.request({ type: "workspaces.list" });
      expect(workspaces).toEqual([
        { workspace_id: "alpha", name: "Alpha", agents: ["qwen", "opencode"], git: false },
        { workspace_id: "beta", name: "Beta", agents: ["opencode", "qwen"], git: false },
        { workspace_id: "repo", name: "Repository", agents: ["qwen"], git: true },
      ]);
    });

    it("each conversation is answered by its own agent in its own workspace", async () => {
      // Each agent in its first workspace (where its process started) and in the other one (its
      // session's cwd is not its process's).
      const cases = [
        { agent_id: "qwen", workspace_id: "alpha", tool: "Shell" }, // Qwen titles its shell "Shell"
        { agent_id: "opencode", workspace_id: "beta", tool: "bash" },
        { agent_id: "qwen", workspace_id: "beta", tool: "Shell" },
        { agent_id: "opencode", workspace_id: "alpha", tool: "bash" },
      ] as const;
      const markers = { alpha: "alpha.marker", beta: "beta.marker" };
      const created: Array<{ id: string; agent_id: string; workspace_id: string }> = [];
      for (const { agent_id, workspace_id, tool } of cases) {
        const entry = await create({ agent_id, workspace_id });
        expect(entry).toMatchObject({ agent_id, workspace_id, branch: null });
        created.push({ id: entry.conversation_id, agent_id, workspace_id });
        const run = await where(entry.conversation_id);
        const other = workspace_id === "alpha" ? "beta" : "alpha";
        // What the agent's shell printed: its workspace's real path and that workspace's marker.
        expect(run.printed).toContain(dirs[workspace_id]);
        expect(run.printed).toContain(markers[workspace_id]);
        expect(run.printed).not.toContain(markers[other]);
        // As the server shows it: the agent's own shell tool ran; its output lists the workspace's
        // files, and `pwd` printed the path base itself, which the server shows as ".".
        expect(framesOf(run.run.frames, "tool.event").map((e) => e.tool_name)).toContain(tool);
        expect(run.wire).toContain(markers[workspace_id]);
        expect(run.wire).not.toContain(markers[other]);
        expect(shownLines(run.shown), run.wire).toContain(".");
        expect(run.run.complete.text.startsWith(TOOL_SAID)).toBe(true);
        expect(run.run.complete.text).toContain(markers[workspace_id]);
      }
      // No frame but the model's own prose (which repeats what it was told) names a server directory.
      expectNoServerPaths(notProse(), [
        dirs.alpha,
        dirs.beta,
        dirs.repo,
        p.ts.dataDir,
        qwenHome,
        opencodeHome,
      ]);

      // The agent processes: one each, started in their own first workspace.
      const qwenPid = lastPid(pidFile.qwen);
      const opencodePid = lastPid(pidFile.opencode);
      expect(qwenPid).not.toBe(opencodePid);
      expect(cwdOf(qwenPid)).toBe(dirs.alpha);
      expect(cwdOf(opencodePid)).toBe(dirs.beta);

      const { conversations } = await p.client.request({ type: "conversation.list", workspace_id: "beta" });
      expect(conversations.map((e) => [e.conversation_id, e.agent_id]).sort()).toEqual(
        created
          .filter((c) => c.workspace_id === "beta")
          .map((c) => [c.id, c.agent_id])
          .sort(),
      );
    });

    it("a SIGKILL of OpenCode's process fails only its run: Qwen's run completes, and OpenCode answers again", async () => {
      const q = await create({ agent_id: "qwen", workspace_id: "alpha" });
      const o = await create({ agent_id: "opencode", workspace_id: "beta" });
      const [qRun, oRun] = await Promise.all(
        [q, o].map((c) =>
          p.client.request({ type: "chat.send", conversation_id: c.conversation_id, text: SLOW_PROMPT }),
        ),
      );
      // Both agents are streaming.
      for (const run of [qRun!, oRun!])
        await p.waitFor(
          "message.delta",
          (m) => m.message_id === messageIdOf(p.frames, run.run_id) && m.text.length >= 20,
          120_000,
        );
      const victim = lastPid(pidFile.opencode);
      const survivor = lastPid(pidFile.qwen);
      process.kill(victim, "SIGKILL");

      const killed = await p.waitFor("run.finished", (m) => m.run_id === oRun!.run_id, 60_000);
      expect(killed.status).toBe("failed");
      expect(killed.error).toContain("the agent process exited unexpectedly");
      const finished = await p.waitFor("run.finished", (m) => m.run_id === qRun!.run_id, 120_000);
      expect(finished.status).toBe("completed");
      const complete = answerOf(p.frames, qRun!.run_id);
      expect(complete?.text.trim()).toBe("word ".repeat(400).trim());
      expect(lastPid(pidFile.qwen)).toBe(survivor); // Qwen's process was never touched

      // OpenCode is respawned for its next turn, in the same conversation.
      const again = await p.chat(o.conversation_id, "say hello", 120_000);
      expect(again.finished.status).toBe("completed");
      expect(again.complete.text).toContain(HELLO);
      expect(lastPid(pidFile.opencode)).not.toBe(victim);
    });

    it("a worktree conversation's agent writes into its worktree on branch pheby/<8 chars>, not into the workspace", async () => {
      const w = await create({ agent_id: "qwen", workspace_id: "repo", worktree: true });
      const branch = `pheby/${w.conversation_id.slice(0, 8)}`;
      expect(w).toMatchObject({ agent_id: "qwen", workspace_id: "repo", branch });
      expect(git(dirs.repo, "for-each-ref", "--format=%(refname:short)", `refs/heads/${branch}`).trim()).toBe(
        branch,
      );
      const worktrees = git(dirs.repo, "worktree", "list", "--porcelain");
      const entry = worktrees.split("\n\n").find((block) => block.includes(`branch refs/heads/${branch}`));
      expect(entry, worktrees).toBeDefined();
      const worktree = /^worktree (.+)$/m.exec(entry!)![1]!;
      expect(worktree).not.toBe(dirs.repo);
      expect(worktree.startsWith(`${p.ts.dataDir}/`)).toBe(false); // never inside the data directory

      const seen = toolResults(llm).length;
      const run = await p.chat(w.conversation_id, "run: echo pheby > from-worktree.txt && pwd", 120_000);
      expect(run.finished.status).toBe("completed");
      expect(toolResults(llm).slice(seen).join("\n")).toContain(worktree);
      expect(readFileSync(join(worktree, "from-worktree.txt"), "utf8")).toBe("pheby\n");
      expect(existsSync(join(dirs.repo, "from-worktree.txt"))).toBe(false);
      expect(git(dirs.repo, "status", "--porcelain")).toBe("");
      expect(git(worktree, "status", "--porcelain")).toContain("from-worktree.txt");
      // Its changes are its worktree's: the new file, against the branch point (the workspace's HEAD).
      const changes = await p.client.request({ type: "changes.list", conversation_id: w.conversation_id });
      expect(changes.base.commit).toBe(git(dirs.repo, "rev-parse", "HEAD").trim());
      expect(changes.files).toEqual([
        expect.objectContaining({ path: "from-worktree.txt", status: "added", additions: 1, deletions: 0 }),
      ]);
      expectNoServerPaths(notProse(), [worktree, dirs.repo]);
    });

    /**
     * The conversation of `agentId` in workspace beta whose history holds `text` (a session started
     * at the desk, found by `conversation.list` and opened), with that history.
     */
    async function deskConversation(agentId: string, text: string) {
      const { conversations } = await p.client.request({ type: "conversation.list", agent_id: agentId });
      const candidates = conversations.filter((e) => e.workspace_id === "beta" && e.session_id !== null);
      for (const e of candidates) {
        const h = await p.client.request({ type: "conversation.open", conversation_id: e.conversation_id });
        if (h.messages.some((m) => m.role === "user" && m.text.includes(text))) return { e, h };
      }
      throw new Error(`no ${agentId} conversation holds "${text}": ${JSON.stringify(conversations)}`);
    }

    it("a session started with Qwen Code's own CLI at the desk is a conversation of Qwen in that workspace, with its history", async () => {
      // The desk: the same config home as the ACP agent, in the beta workspace, one-shot.
      await runCli(AGENT_BINS.qwen, ["-p", "hello from the qwen desk"], {
        cwd: dirs.beta,
        env: { HOME: qwenHome, ...qwenModelEnv(llm) },
      });
      const { e, h } = await deskConversation("qwen", "hello from the qwen desk");
      expect(e).toMatchObject({ agent_id: "qwen", workspace_id: "beta", branch: null, source: "acp" });
      expect(h.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
      expect(h.messages[1]!.text).toContain(HELLO);
    });

    it("a session started with OpenCode's own CLI at the desk is a conversation of OpenCode in that workspace, with its history", async () => {
      await runCli(AGENT_BINS.opencode, ["run", "hello from the opencode desk"], {
        cwd: dirs.beta,
        env: opencodeEnv(llm, opencodeHome),
      });
      // conversation.list imports only from agents that run: use OpenCode first (its catalogue).
      await p.client.request({ type: "models.list", agent_id: "opencode" }, { timeoutMs: 120_000 });
      const { e, h } = await deskConversation("opencode", "hello from the opencode desk");
      expect(e).toMatchObject({ agent_id: "opencode", workspace_id: "beta", branch: null, source: "acp" });
      expect(h.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
      expect(h.messages[1]!.text).toContain(HELLO);
    });
  },
);
