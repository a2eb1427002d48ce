// A kill -9 while a queued run (the `queue` extension) is the active one. After the restart the interrupted
// run is recorded failed, the queue that was left starts by itself, in order, as ordinary runs, and a phone
// that resumes from before the kill is sent all of it, in order.
import { join } from "node:path";
import { FEATURE_QUEUE, FEATURE_RESUME, type ServerMessage } from "@pheby/protocol";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { type App, createConversation, Peer, startApp, tempDir, waitFor } from "./harness.js";

const FEATURES = [FEATURE_QUEUE, FEATURE_RESUME];
const seqOf = (m: ServerMessage) => (m as { seq?: number }).seq ?? -1;

let app: App | undefined;
afterAll(async () => {
  await app?.kill();
});

describe("kill -9 during a queued run", () => {
  it("the interrupted run fails, the rest of the queue runs in order after the restart, and a resume shows it all", async () => {
    const dataDir = join(tempDir("pheby-queue-crash-"), "data");
    app = await startApp({ dataDir });
    const phone = await Peer.ready(app.wsUrl, { features: FEATURES });
    const id = await createConversation(phone);
    const opened = await phone.request({ type: "conversation.open", conversation_id: id });
    if (opened.type !== "conversation.history") throw new Error(JSON.stringify(opened));
    const since = opened.seq!;

    const send = (text: string, cm: string) =>
      phone.request({ type: "chat.send", conversation_id: id, text, queue: true, client_message_id: cm });
    const first = await send("first", "cm-0");
    expect(first.type).toBe("run.accepted");
    const queued = [];
    for (const [i, text] of ["/sim slow", "after the crash 1", "after the crash 2"].entries()) {
      const reply = await send(text, `cm-${i + 1}`);
      if (reply.type !== "run.queued") throw new Error(JSON.stringify(reply));
      queued.push(reply.run_id);
    }
    const [slow, next1, next2] = queued as [string, string, string];
    // The queued /sim slow is the active run and streaming: kill the server there.
    const slowMessage = await phone.runMessageId(slow, 60_000);
    await phone.upcoming((m) => m.type === "message.delta" && m.message_id === slowMessage, 60_000);
    await app.kill();

    app = await startApp({ dataDir });
    const v1 = await Peer.ready(app.wsUrl);
    const back = await Peer.ready(app.wsUrl, { features: FEATURES });
    // The remaining queue started by itself: wait until both follow-ups have finished.
    const history = async () => {
      const h = await v1.request({ type: "conversation.open", conversation_id: id });
      if (h.type !== "conversation.history") throw new Error(JSON.stringify(h));
      return h;
    };
    await waitFor(async () => (await history()).messages.length === 8, 60_000, "the queue to run");
    const h = await history();
    expect(h.messages.map((m) => [m.role, m.role === "user" ? m.text : "…"])).toEqual([
      ["user", "first"],
      ["assistant", "…"],
      ["user", "/sim slow"],
      ["assistant", "…"], // what /sim slow streamed before the kill
      ["user", "after the crash 1"],
      ["assistant", "…"],
      ["user", "after the crash 2"],
      ["assistant", "…"],
    ]);
    const db = new Database(join(dataDir, "pheby.sqlite"), { readonly: true });
    const runs = db.prepare("SELECT run_id, status, error FROM runs ORDER BY started_at, rowid").all();
    expect(db.pragma("integrity_check", { simple: true })).toBe("ok");
    db.close();
    expect(runs.slice(1)).toEqual([
      { run_id: slow, status: "failed", error: "The server stopped during this run" },
      { run_id: next1, status: "completed", error: null },
      { run_id: next2, status: "completed", error: null },
    ]);

    // The phone resumes from before the kill: every run in order, the failed one included.
    const resumed = await back.request({ type: "conversation.open", conversation_id: id, since_seq: since });
    if (resumed.type !== "conversation.resumed") throw new Error(JSON.stringify(resumed));
    // (back was connected meanwhile: its live copies came before the reply, the replay after it.)
    const from = back.frames.findIndex((m) => m.type === "conversation.resumed");
    await waitFor(
      () => back.frames.slice(from).some((m) => seqOf(m) === resumed.to_seq),
      30_000,
      "the replay",
    );
    const replay = back.frames.slice(from + 1).filter((m) => seqOf(m) > since);
    const seqs = replay.map(seqOf);
    expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
    const ends = replay.flatMap((m) => (m.type === "run.finished" ? [[m.run_id, m.status]] : []));
    expect(ends).toEqual([
      [first.type === "run.accepted" ? first.run_id : "", "completed"],
      [slow, "failed"],
      [next1, "completed"],
      [next2, "completed"],
    ]);
    const lastQueue = replay.filter((m) => m.type === "queue.changed").at(-1);
    expect(lastQueue).toMatchObject({ queued: [] });
    expect([...phone.invalid, ...v1.invalid, ...back.invalid]).toEqual([]);
    for (const p of [phone, v1, back]) p.close();
  });
});
