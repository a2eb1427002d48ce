// The `workspaces` schema step on a database from before it, through a real server: its conversations
// (and hidden sessions) belong to the configured default agent and workspace, and its global model
// becomes the default agent's, while another agent starts with its own defaults.
import { join } from "node:path";
import { FEATURE_WORKSPACES } from "@pheby/protocol";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { createSimulatorBackend } from "../src/index.js";
import { MIGRATIONS } from "../src/store/migrations.js";
import { PLACEMENT_MIGRATION } from "../src/store/placement-migration.js";
import { DB_FILE } from "../src/store/store.js";
import { helloWith, type RawClient, startServer, type TestServer, tempDir } from "./helpers.js";

const servers: TestServer[] = [];
const clients: RawClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  for (const s of servers.splice(0)) await s.cleanup();
});

describe("the placement migration", () => {
  it("gives older conversations and global settings to the default agent and workspace", async () => {
    const dataDir = tempDir();
    const db = new Database(join(dataDir, DB_FILE));
    const before = MIGRATIONS.indexOf(PLACEMENT_MIGRATION);
    for (let v = 0; v < before; v++) db.exec(MIGRATIONS[v]!);
    db.pragma(`user_version = ${before}`);
    const conv = "b".repeat(32);
    db.prepare(
      "INSERT INTO conversations (id, name, session_id, source, created_at) VALUES (?, 'Old', 'sim-old', 'simulator', 0)",
    ).run(conv);
    db.prepare(
      "UPDATE global_settings SET model = 'local/coder-7b', provider = 'simlocal' WHERE id = 1",
    ).run();
    db.close();

    const ts = await startServer({
      dataDir,
      agents: [
        { id: "first", name: "First", backend: createSimulatorBackend({ delayMs: 1 }) },
        { id: "second", name: "Second", backend: createSimulatorBackend({ delayMs: 1 }) },
      ],
    });
    servers.push(ts);
    const c = await helloWith(ts, [FEATURE_WORKSPACES]);
    clients.push(c);
    const entries = (await c.ok({ type: "conversation.list" }, "conversation.snapshot")).conversations;
    expect(entries.map((e) => [e.conversation_id, e.agent_id, e.workspace_id, e.branch])).toEqual([
      [conv, "first", "default", null],
    ]);
    const model = (agent: string) =>
      c.ok({ type: "models.current", agent_id: agent }, "model.current").then((m) => m.model);
    expect(await model("first")).toBe("local/coder-7b");
    expect(await model("second")).not.toBe("local/coder-7b");
    // The old conversation is answered by the default agent.
    const accepted = await c.ok({ type: "chat.send", conversation_id: conv, text: "hello" }, "run.accepted");
    const finished = await c.nextAny((m) => m.type === "run.finished" && m.run_id === accepted.run_id);
    expect(finished).toMatchObject({ status: "completed" });
  });
});
