// The inbox extension end to end over real sockets and real SQLite files: list state (status,
// pending, unread per reader, preview, archive), conversation.read / .archive / .status, search.
// Every frame is validated against @pheby/protocol by the test client (helpers' violations).
import { join } from "node:path";
import {
  checkFeatures,
  FEATURE_DEVICES,
  FEATURE_INBOX,
  FEATURE_SCHEDULES,
  type ServerMessage,
  type ServerMessageOf,
} from "@pheby/protocol";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { startReceiver } from "../../conformance/src/push-receiver.js";
import type { TurnSink } from "../src/index.js";
import { DB_FILE } from "../src/store/store.js";
import {
  createConversation,
  helloWith,
  pairDevice,
  RawClient,
  SECRET,
  scriptedBackend,
  send,
  startServer,
  type TestServer,
  tempDir,
} from "./helpers.js";
import { ManualClock } from "./manual-clock.js";
import { FAST_RETRY } from "./push/rig.js";

const INBOX = [FEATURE_INBOX];
const servers: TestServer[] = [];
const clients: RawClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  for (const s of servers.splice(0)) await s.cleanup();
});

async function serve(options: Parameters<typeof startServer>[0] = {}): Promise<TestServer> {
  const ts = await startServer({ publicUrl: "wss://pheby.example.com/ws", ...options });
  servers.push(ts);
  return ts;
}

async function connect(ts: TestServer, features: string[] = INBOX, secret = SECRET): Promise<RawClient> {
  const c = await helloWith(ts, features, secret);
  clients.push(c);
  return c;
}

type Status = ServerMessageOf<"conversation.status">;
type Entry = ServerMessageOf<"conversation.snapshot">["conversations"][number];

async function list(c: RawClient, extra: Record<string, unknown> = {}): Promise<Entry[]> {
  return (await c.ok({ type: "conversation.list", ...extra }, "conversation.snapshot")).conversations;
}

async function entry(
  c: RawClient,
  id: string,
  extra: Record<string, unknown> = {},
): Promise<Entry | undefined> {
  return (await list(c, extra)).find((e) => e.conversation_id === id);
}

/** The conversation.status frames of `conv` a connection received, in order. */
function statuses(c: RawClient, conv: string): Status[] {
  return c.frames.filter((f): f is Status => f.type === "conversation.status" && f.conversation_id === conv);
}

/** Every frame a connection received fits a connection with `features` (v1 byte for byte when empty). */
function expectOnly(frames: readonly ServerMessage[], features: string[]): void {
  for (const frame of frames) expect(checkFeatures(frame, features), JSON.stringify(frame)).toBeUndefined();
}

describe("inbox: list state", () => {
  it("adds status, pending, unread, preview and archived to inbox lists only; v1 stays v1", async () => {
    const ts = await serve();
    const v1 = await connect(ts, []);
    const inbox = await connect(ts);
    const conv = await createConversation(inbox, "Inbox");
    const created = inbox.frames.find((f) => f.type === "conversation.created")!;
    expect(created).toMatchObject({ status: "idle", pending: 0, unread: 0, preview: null, archived: false });
    const updated = await v1.next("conversation.updated");
    expect(updated).toEqual({ type: "conversation.updated", conversation_id: conv, name: "Inbox" });

    await v1.run(await send(v1, conv, "hello there"));
    const row = await entry(inbox, conv);
    expect(row).toMatchObject({ status: "idle", pending: 0, unread: 1, archived: false });
    expect(row?.preview).toMatchObject({ role: "assistant" });
    expect(row?.preview?.text.length).toBeLessThanOrEqual(200);
    const plain = await entry(v1, conv);
    expect(Object.keys(plain!).sort()).toEqual([
      "conversation_id",
      "last_active",
      "name",
      "session_id",
      "source",
    ]);

    // Inbox requests do not exist on a v1 connection; its list ignores archived.
    for (const frame of [
      { type: "conversation.read", conversation_id: conv },
      { type: "conversation.archive", conversation_id: conv, archived: true },
      { type: "conversation.search", query: "hello" },
    ]) {
      await v1.expectError(frame, "unknown_type", frame.type);
    }
    await inbox.ok(
      { type: "conversation.archive", conversation_id: conv, archived: true },
      "conversation.status",
    );
    expect(await entry(v1, conv, { archived: false })).toBeDefined();
    expect(await entry(v1, conv, { archived: true })).toBeDefined();
    expectOnly(v1.frames, []);
    expect(v1.frames.some((f) => f.type === "conversation.status")).toBe(false);
  });

  it("archive: one state for every reader, reply to the requester and the event to every other inbox connection", async () => {
    const ts = await serve();
    const a = await connect(ts);
    const b = await connect(ts);
    const conv = await createConversation(a);
    // The broadcast of a new conversation carries its list state too.
    expect(await b.next("conversation.updated")).toMatchObject({
      conversation_id: conv,
      status: "idle",
      pending: 0,
      unread: 0,
      preview: null,
      archived: false,
    });
    a.send({ type: "conversation.archive", conversation_id: conv, archived: true, request_id: "arch" });
    const reply = await a.next("conversation.status", (m) => m.request_id === "arch");
    expect(reply).toMatchObject({ conversation_id: conv, archived: true, status: "idle" });
    const other = await b.next("conversation.status", (m) => m.conversation_id === conv);
    expect(other.request_id).toBeUndefined();
    expect(other.archived).toBe(true);
    // Unarchived lists leave it out; archived: true lists it alone.
    expect(await entry(b, conv)).toBeUndefined();
    expect((await list(b, { archived: true })).map((e) => e.conversation_id)).toEqual([conv]);
    // A new message does not unarchive it.
    await a.run(await send(a, conv, "still here"));
    expect(await entry(b, conv, { archived: true })).toMatchObject({ archived: true, unread: 1 });
    await a.ok(
      { type: "conversation.archive", conversation_id: conv, archived: false },
      "conversation.status",
    );
    expect(await entry(b, conv)).toMatchObject({ archived: false });
    await a.expectError(
      { type: "conversation.archive", conversation_id: "0".repeat(32), archived: true },
      "conversation_not_found",
      "archive of an unknown conversation",
    );
  });

  it("status follows a run through an approval: running, waiting with one pending, running, idle", async () => {
    const ts = await serve();
    const watcher = await connect(ts);
    const c = await connect(ts);
    const conv = await createConversation(c);
    const runId = await send(c, conv, "/sim approval");
    const asked = await c.next("approval.request");
    const waiting = await watcher.next("conversation.status", (m) => m.status === "waiting");
    expect(waiting).toMatchObject({ conversation_id: conv, pending: 1 });
    expect((await entry(watcher, conv))?.status).toBe("waiting");
    c.send({ type: "approval.respond", approval_id: asked.approval_id, choice: "once" });
    await c.run(runId);
    await watcher.next("conversation.status", (m) => m.status === "idle");
    const seen = statuses(watcher, conv).map((s) => [s.status, s.pending]);
    expect(seen[0]).toEqual(["running", 0]);
    expect(seen).toContainEqual(["waiting", 1]);
    expect(seen.at(-1)).toEqual(["idle", 0]);
    // No two consecutive identical frames: only changes are sent.
    const json = statuses(watcher, conv).map((s) => JSON.stringify(s));
    for (let i = 1; i < json.length; i++) expect(json[i]).not.toBe(json[i - 1]);
  });

  it("a failed run leaves failed until the next run starts", async () => {
    const ts = await serve();
    const c = await connect(ts);
    const conv = await createConversation(c);
    await c.run(await send(c, conv, "/sim fail"));
    await c.next("conversation.status", (m) => m.status === "failed");
    expect(await entry(c, conv)).toMatchObject({ status: "failed" });
    const next = await send(c, conv, "/sim slow");
    await c.next("conversation.status", (m) => m.status === "running");
    c.send({ type: "run.cancel", conversation_id: conv, run_id: next });
    await c.run(next);
    expect((await entry(c, conv))?.status).toBe("idle");
  });

  it("conversation.status carries no seq and is not replayed to a resume connection", async () => {
    const ts = await serve();
    const c = await connect(ts, [FEATURE_INBOX, "resume"]);
    const conv = await createConversation(c);
    await c.run(await send(c, conv, "hi"));
    await c.next("conversation.status", (m) => m.status === "idle" && m.unread === 1);
    for (const s of statuses(c, conv)) expect(s).not.toHaveProperty("seq");
    const resumed = await c.ok(
      { type: "conversation.open", conversation_id: conv, since_seq: 0 },
      "conversation.resumed",
    );
    expect(resumed.to_seq).toBeGreaterThan(0);
    await c.ping();
    const after = c.frames.slice(c.frames.indexOf(resumed));
    expect(after.some((f) => f.type === "conversation.status")).toBe(false);
  });
});

describe("inbox: readers", () => {
  it("two devices read independently; a read reaches only the reader's own connections", async () => {
    const ts = await serve();
    const owner = await connect(ts, [FEATURE_DEVICES, FEATURE_INBOX]);
    const conv = await createConversation(owner);
    await owner.run(await send(owner, conv, "before the phones"));
    const phoneA = await pairDevice(ts, owner, "Phone A");
    const phoneB = await pairDevice(ts, owner, "Phone B");
    const a1 = await connect(ts, INBOX, phoneA.secret);
    const a2 = await connect(ts, INBOX, phoneA.secret);
    const b = await connect(ts, INBOX, phoneB.secret);
    // A new reader starts with everything before it read; the owner has one unread.
    expect(await entry(a1, conv)).toMatchObject({ unread: 0 });
    expect(await entry(owner, conv)).toMatchObject({ unread: 1 });

    await owner.run(await send(owner, conv, "after the phones"));
    for (const c of [a1, a2, b]) await c.next("conversation.status", (m) => m.unread === 1);
    await owner.next("conversation.status", (m) => m.unread === 2);

    const seenB = statuses(b, conv).length;
    const seenOwner = statuses(owner, conv).length;
    a1.send({ type: "conversation.read", conversation_id: conv, request_id: "rd" });
    const reply = await a1.next("conversation.status", (m) => m.request_id === "rd");
    expect(reply.unread).toBe(0);
    const mirrored = await a2.next("conversation.status", (m) => m.unread === 0);
    expect(mirrored.request_id).toBeUndefined();
    await b.ping();
    await owner.ping();
    // Nobody else's unread changed, so nobody else is told.
    expect(statuses(b, conv)).toHaveLength(seenB);
    expect(statuses(owner, conv)).toHaveLength(seenOwner);
    expect(await entry(b, conv)).toMatchObject({ unread: 1 });
    expect(await entry(owner, conv)).toMatchObject({ unread: 2 });

    // Up to an older message: the owner reads its first answer only.
    const history = await owner.ok(
      { type: "conversation.open", conversation_id: conv },
      "conversation.history",
    );
    const answers = history.messages.filter((m) => m.role === "assistant");
    const read = await owner.ok(
      { type: "conversation.read", conversation_id: conv, message_id: answers[0]!.message_id },
      "conversation.status",
    );
    expect(read.unread).toBe(1);
    for (const bad of ["m0", "x1", "m99999999", history.messages[0]!.message_id.replace(/\d+$/, "123456")]) {
      await owner.expectError(
        { type: "conversation.read", conversation_id: conv, message_id: bad },
        "bad_request",
        `read up to ${bad}`,
      );
    }

    // Revoking a device deletes its read state.
    const db = new Database(join(ts.dataDir, DB_FILE), { readonly: true });
    try {
      const marks = () =>
        (db.prepare("SELECT COUNT(*) AS n FROM read_marks WHERE reader = ?").get(phoneA.id) as { n: number })
          .n;
      expect(marks()).toBe(1);
      await owner.ok({ type: "device.revoke", device_id: phoneA.id }, "device.revoked");
      expect(marks()).toBe(0);
      expect(db.prepare("SELECT 1 FROM inbox_readers WHERE reader = ?").get(phoneA.id)).toBeUndefined();
    } finally {
      db.close();
    }
  });

  it("unread and archive survive a restart on the same SQLite file", async () => {
    const dataDir = tempDir();
    const first = await startServer({ dataDir });
    let conv: string;
    let other: string;
    try {
      const c = await RawClient.connect(first.wsUrl, { features: INBOX });
      conv = await createConversation(c);
      other = await createConversation(c);
      await c.run(await send(c, conv, "one"));
      await c.run(await send(c, conv, "two"));
      await c.run(await send(c, other, "three"));
      await c.ok({ type: "conversation.read", conversation_id: other }, "conversation.status");
      await c.ok(
        { type: "conversation.archive", conversation_id: other, archived: true },
        "conversation.status",
      );
      c.close();
    } finally {
      await first.close();
    }
    const second = await serve({ dataDir });
    const c = await connect(second);
    expect(await entry(c, conv)).toMatchObject({ unread: 2, archived: false, status: "idle" });
    expect(await entry(c, other, { archived: true })).toMatchObject({ unread: 0, archived: true });
    expect(await entry(c, other)).toBeUndefined();
  });

  it("a schedule firing while nobody is connected is unread when the reader comes back", async () => {
    const T0 = Date.parse("2026-03-27T12:00:00Z");
    const clock = new ManualClock(T0);
    const agent = scriptedBackend("scripted", async (input, sink: TurnSink) => {
      sink.text(`Done: ${input.text}`);
      return { status: "completed" };
    });
    const ts = await serve({ clock, agent });
    const c = await RawClient.connect(ts.wsUrl, { features: [FEATURE_INBOX, FEATURE_SCHEDULES] });
    const conv = await createConversation(c);
    await c.ok(
      {
        type: "schedule.create",
        conversation_id: conv,
        prompt: "Water the plants",
        at: "2026-03-27T12:05:00Z",
      },
      "schedule.created",
    );
    c.close();
    await c.waitClosed("close");
    clock.advanceTo(Date.parse("2026-03-27T12:05:00Z"));
    // Nobody is connected: wait until the run is recorded, then come back.
    let back: Entry | undefined;
    for (let i = 0; i < 100 && back?.unread !== 1; i++) {
      await new Promise((r) => setTimeout(r, 20));
      const probe = await connect(ts);
      back = await entry(probe, conv);
      probe.close();
    }
    expect(back).toMatchObject({
      status: "idle",
      unread: 1,
      preview: { role: "assistant", text: "Done: Water the plants" },
    });
  });
});

describe("inbox: push", () => {
  it("every payload but test carries the subscription's reader's unread total over unarchived conversations", async () => {
    const receiver = await startReceiver();
    try {
      const ts = await serve({ push: { allowPrivate: true, retry: FAST_RETRY } });
      const c = await connect(ts, [FEATURE_INBOX, "push"]);
      const phone = receiver.endpoint("phone");
      const { subscription_id } = await c.ok(
        { type: "push.subscribe", endpoint: phone.endpoint, keys: phone.keys },
        "push.subscribed",
      );
      const archived = await createConversation(c);
      await c.run(await send(c, archived, "one"));
      expect((await phone.next()).payload).toMatchObject({ kind: "run_finished", unread: 1 });
      await c.ok(
        { type: "conversation.archive", conversation_id: archived, archived: true },
        "conversation.status",
      );
      const conv = await createConversation(c);
      await c.run(await send(c, conv, "two"));
      // The archived conversation's answer no longer counts.
      expect((await phone.next()).payload).toMatchObject({
        kind: "run_finished",
        conversation_id: conv,
        unread: 1,
      });
      await c.ok({ type: "push.test", subscription_id }, "push.tested");
      const test = await phone.next();
      expect(test.payload).toMatchObject({ kind: "test" });
      expect(test.payload).not.toHaveProperty("unread");
      expect(receiver.errors).toEqual([]);
    } finally {
      await receiver.close();
    }
  });
});

describe("inbox: search", () => {
  /** Write messages straight into the server's SQLite file, as many runs would (the index follows by trigger). */
  function insertMessages(ts: TestServer, conv: string, texts: string[]): void {
    const db = new Database(join(ts.dataDir, DB_FILE));
    try {
      const insert = db.prepare(
        "INSERT INTO messages (conversation_id, role, text, ts, run_id) VALUES (?, 'assistant', ?, ?, 'r')",
      );
      db.transaction(() => {
        for (const [i, t] of texts.entries()) insert.run(conv, t, Date.parse("2026-01-01T00:00:00Z") + i);
      })();
    } finally {
      db.close();
    }
  }

  it("finds messages of every conversation, archived ones too, newest first, with plain snippets", async () => {
    const ts = await serve();
    const c = await connect(ts);
    const conv = await createConversation(c);
    const archived = await createConversation(c);
    await c.run(await send(c, conv, "please deploy the staging branch"));
    await c.run(await send(c, archived, `deploy ${"padding ".repeat(80)}production`));
    await c.ok(
      { type: "conversation.archive", conversation_id: archived, archived: true },
      "conversation.status",
    );
    const { results } = await c.ok({ type: "conversation.search", query: "deploy" }, "conversation.results");
    // Every message, the user's too: the archived conversation's answer and question, then the other's.
    expect(results.map((r) => r.conversation_id)).toEqual([archived, archived, conv, conv]);
    for (const r of results) {
      expect(r.message_id).toMatch(/^m\d+$/);
      expect([...r.snippet].length).toBeLessThanOrEqual(200);
      expect(r.snippet).toContain("deploy");
      expect(r.snippet).not.toMatch(/[<>[\]]/);
    }
    const phrase = await c.ok(
      { type: "conversation.search", query: '"staging branch"' },
      "conversation.results",
    );
    expect(phrase.results.length).toBeGreaterThan(0);
    expect(new Set(phrase.results.map((r) => r.conversation_id))).toEqual(new Set([conv]));
  });

  it("searches a query FTS5 cannot parse as plain words, never an error", async () => {
    const ts = await serve();
    const c = await connect(ts);
    const conv = await createConversation(c);
    await c.run(await send(c, conv, "unbalanced quotes near the parser"));
    for (const query of ['"unbalanced', "NEAR(", "near( parser", "text:", "AND", "*", "(((", 'x:"y']) {
      const reply = await c.ok({ type: "conversation.search", query }, "conversation.results");
      expect(reply.query).toBe(query);
      if (query.includes("unbalanced") || query.includes("parser"))
        expect(reply.results.length).toBeGreaterThan(0);
    }
  });

  it("takes 50 results and 200 characters, refuses 51 and 201", async () => {
    const ts = await serve();
    const c = await connect(ts);
    const conv = await createConversation(c);
    insertMessages(
      ts,
      conv,
      Array.from({ length: 60 }, (_, i) => `needle number ${i}`),
    );
    const fifty = await c.ok(
      { type: "conversation.search", query: "needle", limit: 50 },
      "conversation.results",
    );
    expect(fifty.results).toHaveLength(50);
    expect(fifty.results[0]?.snippet).toBe("needle number 59");
    const byDefault = await c.ok({ type: "conversation.search", query: "needle" }, "conversation.results");
    expect(byDefault.results).toHaveLength(20);
    await c.expectError(
      { type: "conversation.search", query: "needle", limit: 51 },
      "bad_request",
      "limit 51",
    );
    await c.ok({ type: "conversation.search", query: "n".repeat(200) }, "conversation.results");
    await c.expectError({ type: "conversation.search", query: "n".repeat(201) }, "bad_request", "query 201");
  });
});
