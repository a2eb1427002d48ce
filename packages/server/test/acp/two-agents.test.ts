// Two ACP agents (the scripted fake agent, real child processes) behind one real server: each
// conversation's session opens in its workspace's directory in its own agent; sessions started
// elsewhere are imported only from agents already running, into the workspace of their directory;
// one agent's process crashing leaves the other's run completing.
import { mkdirSync, realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { FEATURE_WORKSPACES, type ServerMessageOf } from "@pheby/protocol";
import { afterEach, describe, expect, it } from "vitest";
import { createAcpBackend } from "../../src/agent/acp/index.js";
import { helloWith, type RawClient, startServer, type TestServer, useTempDirs } from "../helpers.js";
import { FAKE_AGENT_COMMAND, fakeAgentDir } from "./harness.js";

const temp = useTempDirs();
const servers: TestServer[] = [];
const clients: RawClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  for (const s of servers.splice(0)) await s.cleanup();
});

/** A session "started at the desk" in `cwd`, in the fake agent's state before it runs. */
function deskSession(agent: ReturnType<typeof fakeAgentDir>, id: string, cwd: string, title: string) {
  const state = {
    [id]: { cwd, title, history: [], model: "fast", effort: "medium", mode: "default" },
  };
  writeFileSync(agent.env.FAKE_STATE!, JSON.stringify(state));
}

async function twoAgents() {
  const alpha = fakeAgentDir();
  const beta = fakeAgentDir();
  const site = realpathSync(temp());
  const notes = realpathSync(temp());
  mkdirSync(join(site, "src"));
  const backend = (agent: ReturnType<typeof fakeAgentDir>) =>
    createAcpBackend({
      command: FAKE_AGENT_COMMAND,
      cwd: agent.dir,
      allowedFileRoots: [],
      env: agent.env,
      respawnBackoffMs: 10,
      requestTimeoutMs: 15_000,
    });
  const ts = await startServer({
    agents: [
      { id: "alpha", name: "Alpha", backend: backend(alpha) },
      { id: "beta", name: "Beta", backend: backend(beta) },
    ],
    workspaces: [
      { id: "site", name: "Site", path: site },
      { id: "notes", name: "Notes", path: notes, agents: ["beta"] },
    ],
  });
  servers.push(ts);
  const c = await helloWith(ts, [FEATURE_WORKSPACES]);
  clients.push(c);
  return { alpha, beta, site, notes, ts, c };
}

async function run(c: RawClient, conversationId: string, text: string) {
  const accepted = await c.ok({ type: "chat.send", conversation_id: conversationId, text }, "run.accepted");
  return accepted.run_id;
}

async function finished(c: RawClient, runId: string) {
  return (await c.nextAny(
    (m) => m.type === "run.finished" && m.run_id === runId,
    30_000,
  )) as ServerMessageOf<"run.finished">;
}

describe("two ACP agents behind one server", () => {
  it("opens each conversation's session in its own agent, in its workspace's directory", async () => {
    const { alpha, beta, site, notes, c } = await twoAgents();
    const ofAlpha = (await c.ok({ type: "conversation.create" }, "conversation.created")).conversation_id;
    const ofBeta = (
      await c.ok({ type: "conversation.create", workspace_id: "notes" }, "conversation.created")
    ).conversation_id;
    expect(alpha.calls("session/new").map((x) => x.params.cwd)).toContain(site);
    expect(alpha.calls("session/new").map((x) => x.params.cwd)).not.toContain(notes);
    expect(beta.calls("session/new").map((x) => x.params.cwd)).toContain(notes);
    expect((await finished(c, await run(c, ofBeta, "echo to beta"))).status).toBe("completed");
    expect((await finished(c, await run(c, ofAlpha, "echo to alpha"))).status).toBe("completed");
    const prompts = (agent: ReturnType<typeof fakeAgentDir>) =>
      agent.calls("session/prompt").map((x) => JSON.stringify(x.params.prompt));
    expect(prompts(beta).join()).toContain("echo to beta");
    expect(prompts(beta).join()).not.toContain("echo to alpha");
    expect(prompts(alpha).join()).toContain("echo to alpha");
  });

  it("imports sessions started elsewhere only from running agents, into the workspace of their directory", async () => {
    const alpha = fakeAgentDir();
    const beta = fakeAgentDir();
    const site = realpathSync(temp());
    const elsewhere = realpathSync(temp());
    deskSession(alpha, "desk-alpha", site, "Alpha at the desk");
    writeFileSync(
      beta.env.FAKE_STATE!,
      JSON.stringify({
        "desk-beta": {
          cwd: site,
          title: "Beta at the desk",
          history: [],
          model: "fast",
          effort: "medium",
          mode: "default",
        },
        "desk-other": {
          cwd: elsewhere,
          title: "Not a workspace",
          history: [],
          model: "fast",
          effort: "medium",
          mode: "default",
        },
      }),
    );
    const backend = (agent: ReturnType<typeof fakeAgentDir>) =>
      createAcpBackend({
        command: FAKE_AGENT_COMMAND,
        cwd: agent.dir,
        allowedFileRoots: [],
        env: agent.env,
        requestTimeoutMs: 15_000,
      });
    const ts = await startServer({
      agents: [
        { id: "alpha", name: "Alpha", backend: backend(alpha) },
        { id: "beta", name: "Beta", backend: backend(beta) },
      ],
      workspaces: [{ id: "site", name: "Site", path: site }],
    });
    servers.push(ts);
    const c = await helloWith(ts, [FEATURE_WORKSPACES]);
    clients.push(c);
    const names = async () =>
      (await c.ok({ type: "conversation.list" }, "conversation.snapshot")).conversations
        .map((e) => `${e.name}|${e.agent_id}|${e.workspace_id}`)
        .sort();
    // The default agent is brought up to list (as before); beta is not started by a list.
    expect(await names()).toEqual(["Alpha at the desk|alpha|site"]);
    expect(beta.calls()).toEqual([]);
    await c.ok({ type: "conversation.create", agent_id: "beta" }, "conversation.created");
    expect(await names()).toEqual([
      "Alpha at the desk|alpha|site",
      "Beta at the desk|beta|site",
      "New chat|beta|site",
    ]);
  });

  it("one agent's process crashing leaves the other's run completing", async () => {
    const { c } = await twoAgents();
    const ofAlpha = (await c.ok({ type: "conversation.create" }, "conversation.created")).conversation_id;
    const ofBeta = (await c.ok({ type: "conversation.create", agent_id: "beta" }, "conversation.created"))
      .conversation_id;
    const longRun = await run(c, ofBeta, "sleep 500");
    // Beta's turn is under way when alpha's process dies.
    await c.nextAny((m) => m.type === "message.delta" && m.conversation_id === ofBeta, 30_000);
    const crashed = await run(c, ofAlpha, "crash");
    expect((await finished(c, crashed)).status).toBe("failed");
    const survived = await finished(c, longRun);
    expect(survived.status).toBe("completed");
    // Its status said so: idle once its process was gone (spawned again on next use).
    await c.nextAny(
      (m) => m.type === "agents.changed" && m.agent.agent_id === "alpha" && m.agent.status === "idle",
    );
    // Alpha comes back for its next turn.
    expect((await finished(c, await run(c, ofAlpha, "echo again"))).status).toBe("completed");
    const alphaStatuses = c.frames
      .filter((m) => m.type === "agents.changed" && m.agent.agent_id === "alpha")
      .map((m) => (m as ServerMessageOf<"agents.changed">).agent.status);
    expect(alphaStatuses.at(-1)).toBe("ready");
    expect(
      c.frames.some(
        (m) =>
          m.type === "agents.changed" &&
          m.agent.agent_id === "beta" &&
          m.agent.status !== "ready" &&
          m.agent.status !== "starting",
      ),
    ).toBe(false);
  });
});
