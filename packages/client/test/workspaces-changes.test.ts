// The `workspaces` and `changes` extensions through the client's typed calls. Until the server answers
// them, the frames are checked against a scripted peer (every frame it sends is a valid
// @pheby/protocol frame of the feature it enabled, every request the client sends decodes on the
// server's side with those features); against the real server of today on port 0 (the simulator, no
// multi-agent support yet; imported from its build by path, see in-memory.test.ts) the defaults ask for both, and a server that did not enable them answers unknown_type
// while v1 list entries stay v1.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  decodeClientFrame,
  decodeServerFrame,
  FEATURE_CHANGES,
  FEATURE_WORKSPACES,
  type ServerMessage,
} from "@pheby/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPhebyServer, createSimulatorBackend, type PhebyServer } from "../../server/dist/index.js";
import { DEFAULT_FEATURES, type InvalidFrame, PhebyClient, PhebyError } from "../src/index.js";
import { defaultHandler, ScriptedPeer, TS } from "./peer.js";

const CONV = "a1b2c3d4e5f60718293a4b5c6d7e8f90";
const RUN = "8c1f2e3d4c5b6a798877665544332211";
const COMMIT = "3f786850e387550fdab836ed7e6dc881de23001b";
const ENABLED = [FEATURE_WORKSPACES, FEATURE_CHANGES];
const agent = { agent_id: "claude", name: "Claude Code", status: "ready" } as const;
const files = [
  {
    file_id: "c-1",
    path: "src/footer.ts",
    status: "modified",
    type: "file",
    additions: 2,
    deletions: 1,
    binary: false,
  },
  {
    file_id: "c-2",
    path: "src/site.css",
    old_path: "src/footer.css",
    status: "renamed",
    type: "file",
    additions: 0,
    deletions: 0,
    binary: false,
  },
  {
    file_id: "c-3",
    path: "logo.png",
    status: "added",
    type: "file",
    additions: 0,
    deletions: 0,
    binary: true,
  },
];

/** The scripted server's answers to the two extensions' requests. */
function answer(frame: Record<string, unknown>): unknown[] | undefined {
  const request_id = frame.request_id;
  switch (frame.type) {
    case "hello":
      return [{ type: "ready", protocol_version: 1, server: "pheby", ts: TS, features: ENABLED, request_id }];
    case "agents.list":
      return [
        { type: "agents.changed", agent: { ...agent, status: "starting" } },
        {
          type: "agents.snapshot",
          request_id,
          agents: [agent, { agent_id: "hermes", name: "Hermes", status: "idle" }],
        },
      ];
    case "workspaces.list":
      return [
        {
          type: "workspaces.snapshot",
          request_id,
          workspaces: [{ workspace_id: "site", name: "Website", agents: ["claude", "hermes"], git: true }],
        },
      ];
    case "conversation.create":
      return [
        {
          type: "conversation.created",
          request_id,
          conversation_id: CONV,
          name: "New chat",
          agent_id: frame.agent_id ?? "claude",
          workspace_id: frame.workspace_id ?? "site",
          branch: frame.worktree ? "pheby/a1b2c3d4" : null,
        },
      ];
    case "conversation.list":
      return [
        {
          type: "conversation.snapshot",
          request_id,
          conversations: [
            {
              conversation_id: CONV,
              name: "New chat",
              session_id: null,
              last_active: null,
              source: "acp",
              agent_id: "claude",
              workspace_id: "site",
              branch: "pheby/a1b2c3d4",
            },
          ],
        },
      ];
    case "models.list":
      return [
        {
          type: "models.snapshot",
          request_id,
          providers: [],
          current_model: null,
          current_provider: null,
          supported_reasoning_efforts: [],
          ts: TS,
        },
      ];
    case "model.set":
      return [
        {
          type: "model.changed",
          request_id,
          model: frame.model,
          provider: null,
          scope: "global",
          agent_id: frame.agent_id,
        },
      ];
    case "reasoning.set":
      return [
        {
          type: "reasoning.changed",
          request_id,
          effort: frame.effort,
          scope: "global",
          agent_id: frame.agent_id,
        },
      ];
    case "changes.list":
      if (frame.conversation_id === "plain") {
        return [
          {
            type: "error",
            request_id,
            error: { code: "not_implemented", message: "this conversation is not in a git repository" },
            ts: TS,
          },
        ];
      }
      return [
        {
          type: "changes.snapshot",
          request_id,
          conversation_id: frame.conversation_id,
          base: { commit: COMMIT, label: "3f78685" },
          files,
          truncated: false,
        },
      ];
    case "changes.diff":
      if (frame.file_id === "stale") {
        return [{ type: "error", request_id, error: { code: "not_found", message: "no such file" }, ts: TS }];
      }
      return [
        {
          type: "changes.file",
          request_id,
          conversation_id: frame.conversation_id,
          file_id: frame.file_id,
          path: frame.file_id === "c-3" ? "logo.png" : "src/footer.ts",
          patch:
            frame.file_id === "c-3"
              ? null
              : "--- a/src/footer.ts\n+++ b/src/footer.ts\n@@ -1 +1 @@\n-a\n+b\n",
          truncated: false,
        },
      ];
    default:
      return undefined;
  }
}

describe("workspaces and changes: the facade's frames, against a scripted peer", () => {
  let peer: ScriptedPeer;
  let client: PhebyClient;
  const invalid: InvalidFrame[] = [];
  // The frames sent after hello, without what the client adds itself (request_id, resume's client_message_id).
  const sent = () =>
    peer.connections[0]!.received.slice(1).map(({ request_id: _r, client_message_id: _c, ...f }) => f);

  beforeAll(async () => {
    peer = await ScriptedPeer.start();
    peer.handler = (frame, conn) => {
      const replies = answer(frame) ?? defaultHandler(frame, conn);
      // Every frame the scripted server sends fits a connection with both features.
      for (const reply of replies ?? []) {
        expect(
          decodeServerFrame(JSON.stringify(reply), { features: ENABLED }).ok,
          JSON.stringify(reply),
        ).toBe(true);
      }
      return replies;
    };
    client = new PhebyClient({ url: peer.url, secret: "s3cret", reconnect: false });
    client.onInvalidFrame((frame) => invalid.push(frame));
    await client.connect();
  });
  afterAll(async () => {
    client?.close();
    await peer?.close();
    expect(invalid).toEqual([]);
  });

  it("asks for both by default, after inbox", () => {
    expect(DEFAULT_FEATURES.slice(-3)).toEqual(["inbox", FEATURE_WORKSPACES, FEATURE_CHANGES]);
    expect(peer.connections[0]!.received[0]!.features).toEqual(expect.arrayContaining(ENABLED));
    expect(client.features).toEqual(ENABLED);
  });

  it("listAgents and listWorkspaces resolve with the lists; agents.changed reaches on()", async () => {
    const changed = client.next("agents.changed");
    const agents = await client.listAgents();
    expect(agents.map((a) => [a.agent_id, a.status])).toEqual([
      ["claude", "ready"],
      ["hermes", "idle"],
    ]);
    expect((await changed).agent).toEqual({ ...agent, status: "starting" });
    expect(await client.listWorkspaces()).toEqual([
      { workspace_id: "site", name: "Website", agents: ["claude", "hermes"], git: true },
    ]);
  });

  it("createConversation and listConversations send only the fields given, and entries carry agent, workspace and branch", async () => {
    const before = sent().length;
    const created = await client.createConversation({
      agentId: "claude",
      workspaceId: "site",
      worktree: true,
    });
    expect(created).toMatchObject({ agent_id: "claude", workspace_id: "site", branch: "pheby/a1b2c3d4" });
    const plain = await client.createConversation({ name: "x" });
    expect(plain.branch).toBeNull();
    const [entry] = await client.listConversations({ agentId: "claude", workspaceId: "site" });
    expect(entry).toMatchObject({ agent_id: "claude", workspace_id: "site", branch: "pheby/a1b2c3d4" });
    await client.listConversations();
    expect(sent().slice(before)).toEqual([
      { type: "conversation.create", agent_id: "claude", workspace_id: "site", worktree: true },
      { type: "conversation.create", name: "x" },
      { type: "conversation.list", agent_id: "claude", workspace_id: "site" },
      { type: "conversation.list" },
    ]);
  });

  it("model and reasoning calls carry agent_id (an agent's global scope) or conversation_id", async () => {
    const before = sent().length;
    await client.listModels({ agentId: "hermes" });
    await client.listModels({ conversationId: CONV });
    expect(await client.setModel("m1", { agentId: "hermes" })).toMatchObject({
      scope: "global",
      agent_id: "hermes",
    });
    expect(await client.setReasoning("high", { agentId: "hermes" })).toMatchObject({ agent_id: "hermes" });
    expect(sent().slice(before)).toEqual([
      { type: "models.list", agent_id: "hermes" },
      { type: "models.list", conversation_id: CONV },
      { type: "model.set", model: "m1", agent_id: "hermes" },
      { type: "reasoning.set", effort: "high", agent_id: "hermes" },
    ]);
  });

  it("listChanges and diffChange resolve with the snapshot and the patch; errors keep their codes", async () => {
    const snapshot = await client.listChanges(CONV);
    expect(snapshot.base).toEqual({ commit: COMMIT, label: "3f78685" });
    expect(snapshot.files.map((f) => [f.status, f.path, f.old_path, f.additions, f.deletions])).toEqual([
      ["modified", "src/footer.ts", undefined, 2, 1],
      ["renamed", "src/site.css", "src/footer.css", 0, 0],
      ["added", "logo.png", undefined, 0, 0],
    ]);
    expect(snapshot.truncated).toBe(false);
    expect((await client.diffChange(CONV, "c-1")).patch).toContain("+b");
    expect((await client.diffChange(CONV, "c-3")).patch).toBeNull();
    await expect(client.diffChange(CONV, "stale")).rejects.toMatchObject({ code: "not_found" });
    const refused = await client.listChanges("plain").catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(PhebyError);
    expect(refused).toMatchObject({ code: "not_implemented" });
    expect(sent().filter((f) => String(f.type).startsWith("changes."))).toEqual([
      { type: "changes.list", conversation_id: CONV },
      { type: "changes.diff", conversation_id: CONV, file_id: "c-1" },
      { type: "changes.diff", conversation_id: CONV, file_id: "c-3" },
      { type: "changes.diff", conversation_id: CONV, file_id: "stale" },
      { type: "changes.list", conversation_id: "plain" },
    ]);
  });

  it("every request it sent decodes on a server with both features, and none is v1 noise without them", () => {
    for (const frame of peer.connections[0]!.received) {
      expect(decodeClientFrame(JSON.stringify(frame), { features: ENABLED }).ok, JSON.stringify(frame)).toBe(
        true,
      );
    }
  });

  it("delivers changes.changed events to on()", async () => {
    const changed = client.next("changes.changed", (m) => m.conversation_id === CONV);
    peer.broadcast({
      type: "changes.changed",
      conversation_id: CONV,
      run_id: RUN,
      file_count: 3,
      additions: 2,
      deletions: 1,
    });
    expect(await changed).toMatchObject({ run_id: RUN, file_count: 3, additions: 2, deletions: 1 });
  });
});

describe("workspaces and changes against today's server, which does not enable them", () => {
  const SECRET = "workspaces-secret-0123456789";
  let dataDir: string;
  let server: PhebyServer;
  const frames: ServerMessage[] = [];
  let client: PhebyClient;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "pheby-client-workspaces-"));
    server = createPhebyServer({ secret: SECRET, dataDir, agent: createSimulatorBackend({ delayMs: 1 }) });
    const { port } = await server.listen({ port: 0, host: "127.0.0.1" });
    client = new PhebyClient({ url: `ws://127.0.0.1:${port}/ws`, secret: SECRET, pingIntervalMs: 0 });
    client.on("*", (m) => frames.push(m));
    await client.connect();
  });
  afterAll(async () => {
    client?.close();
    await server?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("asks for them, is not granted them, and gets unknown_type for their requests", async () => {
    expect(client.features).not.toContain(FEATURE_WORKSPACES);
    expect(client.features).not.toContain(FEATURE_CHANGES);
    await expect(client.listAgents()).rejects.toMatchObject({ code: "unknown_type" });
    await expect(client.listChanges(CONV)).rejects.toMatchObject({ code: "unknown_type" });
  });

  it("their fields on a v1 request are ignored: the conversation is created and listed as v1", async () => {
    const created = await client.createConversation({ name: "here", agentId: "nobody", worktree: true });
    expect(created).not.toHaveProperty("agent_id");
    const listed = await client.listConversations({ agentId: "nobody" });
    expect(listed.map((c) => c.conversation_id)).toContain(created.conversation_id);
    for (const frame of frames) {
      expect(decodeServerFrame(JSON.stringify(frame), { features: client.features }).ok).toBe(true);
    }
  });
});
