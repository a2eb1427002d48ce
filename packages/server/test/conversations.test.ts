import { LIMITS } from "@pheby/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Store } from "../src/store/store.js";
import {
  createConversation,
  RawClient,
  startServer,
  type TestServer,
  tempDir,
  useServerWithTwoClients,
} from "./helpers.js";

describe("conversation lifecycle", () => {
  const env = useServerWithTwoClients({ transport: "memory" });
  let a: RawClient;
  let b: RawClient;
  beforeAll(() => {
    ({ a, b } = env);
  });

  it("create: reply conversation.created to the requester, conversation.updated to everyone", async () => {
    const created = await a.ok({ type: "conversation.create", name: "Project X" }, "conversation.created");
    expect(created.conversation_id).toMatch(/^[0-9a-f]{32}$/);
    expect(created.name).toBe("Project X");
    for (const c of [a, b]) {
      const updated = await c.next(
        "conversation.updated",
        (m) => m.conversation_id === created.conversation_id,
      );
      expect(updated).toEqual({
        type: "conversation.updated",
        conversation_id: created.conversation_id,
        name: "Project X",
      });
    }
    expect(b.frames.some((m) => m.type === "conversation.created")).toBe(false);
    const unnamed = await a.ok({ type: "conversation.create" }, "conversation.created");
    expect(unnamed.name).toBe("New chat");
  });

  it("list: every live conversation with session_id, source and last_active", async () => {
    const id = await createConversation(a, "Listed");
    const snap = await a.ok({ type: "conversation.list" }, "conversation.snapshot");
    const row = snap.conversations.find((c) => c.conversation_id === id);
    expect(row).toEqual({
      conversation_id: id,
      name: "Listed",
      session_id: `sim-${id}`,
      last_active: null,
      source: "simulator",
    });
  });

  it("rename: reply with request_id and broadcast without; the requester gets both", async () => {
    const id = await createConversation(a, "Before");
    a.send({ type: "conversation.rename", conversation_id: id, name: "  After  ", request_id: "rn" });
    const reply = await a.next("conversation.renamed", (m) => m.request_id === "rn");
    expect(reply).toEqual({
      type: "conversation.renamed",
      request_id: "rn",
      conversation_id: id,
      name: "After",
    });
    const broadcast = { type: "conversation.renamed", conversation_id: id, name: "After" };
    expect(await a.next("conversation.renamed", (m) => m.request_id === undefined)).toEqual(broadcast);
    expect(await b.next("conversation.renamed", (m) => m.conversation_id === id)).toEqual(broadcast);
    const snap = await a.ok({ type: "conversation.list" }, "conversation.snapshot");
    expect(snap.conversations.find((c) => c.conversation_id === id)?.name).toBe("After");
  });

  it("delete: reply and broadcast; the conversation is gone everywhere", async () => {
    const id = await createConversation(a);
    const reply = await a.ok({ type: "conversation.delete", conversation_id: id }, "conversation.deleted");
    expect(reply.conversation_id).toBe(id);
    expect(await b.next("conversation.deleted", (m) => m.conversation_id === id)).toEqual({
      type: "conversation.deleted",
      conversation_id: id,
    });
    const snap = await a.ok({ type: "conversation.list" }, "conversation.snapshot");
    expect(snap.conversations.some((c) => c.conversation_id === id)).toBe(false);
    const again = await a.request(
      { type: "conversation.delete", conversation_id: id },
      "conversation.deleted",
    );
    expect(again).toMatchObject({ type: "error", error: { code: "conversation_not_found" } });
  });

  it("open: an empty conversation has an empty, complete snapshot", async () => {
    const id = await createConversation(a);
    const h = await a.ok({ type: "conversation.open", conversation_id: id }, "conversation.history");
    expect(h).toMatchObject({
      conversation_id: id,
      messages: [],
      has_more: false,
      attachments: [],
      run: null,
      tools: [],
      approvals: [],
      clarifications: [],
    });
  });
});

describe("history paging across more than 500 messages", () => {
  const TOTAL = 1_203;
  let ts: TestServer;
  let c: RawClient;
  let id: string;
  let other: string;

  beforeAll(async () => {
    // Seed the transcript through the store itself, then serve it.
    const dataDir = tempDir();
    const store = new Store(dataDir);
    id = "a".repeat(32);
    other = "b".repeat(32);
    for (const cid of [id, other]) {
      store.createConversation({
        id: cid,
        name: cid,
        session_id: `sim-${cid}`,
        source: "simulator",
        created_at: 0,
      });
    }
    store.db.transaction(() => {
      for (let i = 0; i < TOTAL; i++)
        store.addMessage(id, i % 2 ? "assistant" : "user", `msg ${i}`, 1_000 + i, null);
      store.addMessage(other, "user", "elsewhere", 5_000, null);
    })();
    store.close();
    ts = await startServer({ dataDir, transport: "memory" });
    c = await RawClient.connect(ts.wsUrl);
  });
  afterAll(async () => {
    c.close();
    await ts.cleanup();
  });

  const open = (extra: Record<string, unknown>) =>
    c.request({ type: "conversation.open", conversation_id: id, ...extra }, "conversation.history");

  it("defaults to the newest 200, in chronological order", async () => {
    const h = await open({});
    if (h.type !== "conversation.history") throw new Error(JSON.stringify(h));
    expect(h.messages).toHaveLength(LIMITS.historyPageDefault);
    expect(h.has_more).toBe(true);
    expect(h.messages[0]!.text).toBe(`msg ${TOTAL - 200}`);
    expect(h.messages.at(-1)).toMatchObject({
      text: `msg ${TOTAL - 1}`,
      role: "user",
      ts: new Date(1_000 + TOTAL - 1).toISOString(),
    });
  });

  it("walks back with the exclusive before_message_id cursor, 500 at a time, without gaps or repeats", async () => {
    const texts: string[] = [];
    let before: string | undefined;
    for (;;) {
      const h = await open({ limit: 500, ...(before ? { before_message_id: before } : {}) });
      if (h.type !== "conversation.history") throw new Error(JSON.stringify(h));
      expect(h.messages.length).toBeLessThanOrEqual(500);
      texts.unshift(...h.messages.map((m) => m.text));
      if (!h.has_more) break;
      before = h.messages[0]!.message_id;
    }
    expect(texts).toEqual(Array.from({ length: TOTAL }, (_, i) => `msg ${i}`));
  });

  it("caps a limit over 500 at 500 instead of rejecting it; non-positive or fractional limits are bad_request", async () => {
    for (const limit of [500, 501, 10_000]) {
      const h = await open({ limit });
      if (h.type !== "conversation.history") throw new Error(JSON.stringify(h));
      expect(h.messages).toHaveLength(LIMITS.historyPage);
      expect(h.messages.at(-1)!.text).toBe(`msg ${TOTAL - 1}`);
      expect(h.has_more).toBe(true);
    }
    for (const limit of [0, -1, 2.5, "5"]) {
      expect(await open({ limit })).toMatchObject({ type: "error", error: { code: "bad_request" } });
    }
  });

  it("exactly the last page has has_more false", async () => {
    const first = await open({ limit: 3 });
    if (first.type !== "conversation.history") throw new Error();
    const oldest = await open({ limit: 500, before_message_id: first.messages[0]!.message_id });
    if (oldest.type !== "conversation.history") throw new Error();
    expect(oldest.has_more).toBe(true);
    const h = await open({ limit: 1, before_message_id: "m2" });
    if (h.type !== "conversation.history") throw new Error();
    expect(h.messages.map((m) => m.message_id)).toEqual(["m1"]);
    expect(h.has_more).toBe(false);
    const none = await open({ before_message_id: "m1" });
    expect(none).toMatchObject({ messages: [], has_more: false });
  });

  it("an unknown cursor, a malformed one, or one from another conversation is bad_request", async () => {
    const foreign = (
      await c.ok({ type: "conversation.open", conversation_id: other }, "conversation.history")
    ).messages[0]!.message_id;
    for (const cursor of ["m999999", "x", "m0", "m01", foreign, `m${"9".repeat(30)}`]) {
      expect(await open({ before_message_id: cursor })).toMatchObject({
        type: "error",
        error: { code: "bad_request" },
      });
    }
  });
});

describe("history pages are bounded by bytes as well as by count", () => {
  const BOUND = 10_000;
  // Sizes in UTF-8 bytes ("é" is 2 bytes): a mix under the bound, plus one message far over it.
  const texts = Array.from({ length: 60 }, (_, i) =>
    i === 31 ? "x".repeat(5 * BOUND) : `${i}:${"é".repeat(300 + ((i * 577) % 2_500))}`,
  );
  let ts: TestServer;
  let c: RawClient;
  const id = "c".repeat(32);

  beforeAll(async () => {
    const dataDir = tempDir();
    const store = new Store(dataDir);
    store.createConversation({
      id,
      name: "big",
      session_id: `sim-${id}`,
      source: "simulator",
      created_at: 0,
    });
    store.db.transaction(() => {
      for (const [i, text] of texts.entries()) {
        store.addMessage(id, i % 2 ? "assistant" : "user", text, 1_000 + i, null);
      }
    })();
    store.close();
    ts = await startServer({ dataDir, historyPageBytes: BOUND, transport: "memory" });
    c = await RawClient.connect(ts.wsUrl);
  });
  afterAll(async () => {
    c.close();
    await ts.cleanup();
  });

  it("cuts a page at the byte bound (at least one message each), and paging reaches every message once, in order", async () => {
    const bytes = (list: readonly string[]) => list.reduce((n, t) => n + Buffer.byteLength(t), 0);
    const pages: string[][] = [];
    let before: string | undefined;
    for (;;) {
      const h = await c.ok(
        {
          type: "conversation.open",
          conversation_id: id,
          limit: 500,
          ...(before ? { before_message_id: before } : {}),
        },
        "conversation.history",
      );
      const page = h.messages.map((m) => m.text);
      expect(page.length).toBeGreaterThan(0);
      // Within the bound, unless it is the single oversize message…
      expect(page.length === 1 || bytes(page) <= BOUND).toBe(true);
      const older = texts.slice(0, texts.indexOf(page[0]!));
      expect(h.has_more).toBe(older.length > 0);
      // …and full: the next older message would not have fitted.
      if (h.has_more) expect(bytes([...page, older.at(-1)!])).toBeGreaterThan(BOUND);
      pages.unshift(page);
      if (!h.has_more) break;
      before = h.messages[0]!.message_id;
    }
    expect(pages.flat()).toEqual(texts);
    expect(pages.some((p) => p.length === 1 && p[0] === texts[31])).toBe(true);
    expect(pages.length).toBeGreaterThan(5);
  });

  it("the count limit still applies inside the byte bound", async () => {
    const h = await c.ok(
      { type: "conversation.open", conversation_id: id, limit: 2 },
      "conversation.history",
    );
    expect(h.messages.map((m) => m.text)).toEqual(texts.slice(-2));
    expect(h.has_more).toBe(true);
  });
});
