import { join } from "node:path";
import { CLOSE_CODES } from "@pheby/protocol";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { DB_FILE } from "../src/store/store.js";
import {
  createConversation,
  RawClient,
  send,
  spawnServerProcess,
  startServer,
  useTempDirs,
} from "./helpers.js";

const dir = useTempDirs();

function runRows(dataDir: string) {
  const db = new Database(join(dataDir, DB_FILE), { readonly: true });
  try {
    return db.prepare("SELECT run_id, status, error FROM runs").all() as {
      run_id: string;
      status: string;
      error: string | null;
    }[];
  } finally {
    db.close();
  }
}

describe("restart persistence", () => {
  it("conversations, names, tombstones and the transcript survive a restart with stable IDs", async () => {
    const dataDir = dir();
    let ts = await startServer({ dataDir });
    let c = await RawClient.connect(ts.wsUrl);
    const keep = await createConversation(c, "Keep");
    const drop = await createConversation(c, "Drop");
    await c.run(await send(c, keep, "remember me"));
    await c.ok({ type: "conversation.rename", conversation_id: keep, name: "Kept" }, "conversation.renamed");
    await c.ok({ type: "conversation.delete", conversation_id: drop }, "conversation.deleted");
    const before = await c.ok({ type: "conversation.open", conversation_id: keep }, "conversation.history");
    c.close();
    await ts.close();

    ts = await startServer({ dataDir });
    c = await RawClient.connect(ts.wsUrl);
    const snap = await c.ok({ type: "conversation.list" }, "conversation.snapshot");
    expect(snap.conversations.map((x) => [x.conversation_id, x.name])).toEqual([[keep, "Kept"]]);
    expect(snap.conversations[0]!.last_active).not.toBeNull();
    const after = await c.ok({ type: "conversation.open", conversation_id: keep }, "conversation.history");
    expect(after.messages).toEqual(before.messages);
    expect(after.messages[0]).toMatchObject({ role: "user", text: "remember me" });
    c.close();
    await ts.close();
  });

  it("a run active at shutdown is finished failed for connected clients and stays failed after restart", async () => {
    const dataDir = dir();
    let ts = await startServer({ dataDir });
    let c = await RawClient.connect(ts.wsUrl);
    const id = await createConversation(c);
    const runId = await send(c, id, "/sim slow");
    await c.next("message.delta");
    await ts.close();
    expect(await c.next("run.finished", (m) => m.run_id === runId)).toMatchObject({
      status: "failed",
      error: "Server shutting down",
    });
    expect((await c.closed).code).toBe(CLOSE_CODES.goingAway);

    ts = await startServer({ dataDir });
    c = await RawClient.connect(ts.wsUrl);
    const h = await c.ok({ type: "conversation.open", conversation_id: id }, "conversation.history");
    expect(h.run).toBeNull();
    expect(h.messages[0]!.text).toBe("/sim slow");
    expect(runRows(dataDir)).toEqual([{ run_id: runId, status: "failed", error: "Server shutting down" }]);
    c.close();
    await ts.close();
  });

  it("after a crash (SIGKILL mid-run) the interrupted run is recorded failed with the text streamed so far, and open shows run: null", async () => {
    const dataDir = dir();
    const { child, port } = await spawnServerProcess(dataDir);
    const c = await RawClient.connect(`ws://127.0.0.1:${port}/ws`);
    const id = await createConversation(c);
    const runId = await send(c, id, "/sim slow");
    const seen = await c.next("message.delta");
    child.kill("SIGKILL");
    await c.closed;
    expect(runRows(dataDir)).toEqual([{ run_id: runId, status: "running", error: null }]);

    const ts = await startServer({ dataDir });
    const c2 = await RawClient.connect(ts.wsUrl);
    const h = await c2.ok({ type: "conversation.open", conversation_id: id }, "conversation.history");
    expect(h.run).toBeNull();
    // What was streamed before the crash is the failed run's answer, as for any failed run.
    expect(h.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(h.messages[0]!.text).toBe("/sim slow");
    expect(h.messages[1]!.text.startsWith(seen.text)).toBe(true);
    expect(runRows(dataDir)).toEqual([
      { run_id: runId, status: "failed", error: "The server stopped during this run" },
    ]);
    // The conversation is usable again.
    await c2.run(await send(c2, id, "still here?"));
    c2.close();
    await ts.close();
  });
});
