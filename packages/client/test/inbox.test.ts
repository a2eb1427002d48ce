// The `inbox` extension's typed API (listConversations, markRead, archive, search and the
// conversation.status event) against the real server and its simulator on port 0. The server is
// imported from its build by path, not as a package: see in-memory.test.ts.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPhebyServer, createSimulatorBackend, type PhebyServer } from "../../server/dist/index.js";
import { type InboxStatus, type InvalidFrame, PhebyClient } from "../src/index.js";

const SECRET = "inbox-secret-0123456789abcdef";
let server: PhebyServer;
let dataDir: string;
let url: string;
const clients: PhebyClient[] = [];
const invalid: InvalidFrame[] = [];

async function connect(features?: readonly string[]): Promise<PhebyClient> {
  const client = new PhebyClient({
    url,
    secret: SECRET,
    pingIntervalMs: 0,
    ...(features ? { features } : {}),
  });
  client.onInvalidFrame((frame) => invalid.push(frame));
  clients.push(client);
  await client.connect();
  return client;
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "pheby-client-inbox-"));
  server = createPhebyServer({ secret: SECRET, dataDir, agent: createSimulatorBackend({ delayMs: 1 }) });
  const { port } = await server.listen({ port: 0, host: "127.0.0.1" });
  url = `ws://127.0.0.1:${port}/ws`;
});

afterAll(async () => {
  for (const client of clients) client.close();
  await server.close();
  rmSync(dataDir, { recursive: true, force: true });
  // The server never sent a frame @pheby/protocol rejects.
  expect(invalid).toEqual([]);
});

describe("inbox", () => {
  it("is asked for by default, and every list entry carries its fields", async () => {
    const client = await connect();
    expect(client.features).toContain("inbox");
    const { conversation_id } = await client.request({ type: "conversation.create", name: "fresh" });
    const entry = (await client.listConversations()).find((c) => c.conversation_id === conversation_id);
    expect(entry).toMatchObject({ status: "idle", pending: 0, unread: 0, preview: null, archived: false });
  });

  it("status goes waiting through an approval, then idle with one unread answer; markRead clears it for this reader's other connections too", async () => {
    const client = await connect();
    const other = await connect();
    const { conversation_id } = await client.request({ type: "conversation.create", name: "approve me" });
    const statuses: InboxStatus[] = [];
    client.on("conversation.status", (m) => {
      if (m.conversation_id === conversation_id) statuses.push(m);
    });
    const asked = client.next("approval.request", (m) => m.conversation_id === conversation_id);
    const waiting = client.next(
      "conversation.status",
      (m) => m.conversation_id === conversation_id && m.status === "waiting",
    );
    const { run_id } = await client.request({ type: "chat.send", conversation_id, text: "/sim approval" });
    const { approval_id } = await asked;
    expect(await waiting).toMatchObject({ status: "waiting", pending: 1, archived: false });
    const listed = (await client.listConversations()).find((c) => c.conversation_id === conversation_id);
    expect(listed).toMatchObject({ status: "waiting", pending: 1 });

    const idle = client.next(
      "conversation.status",
      (m) => m.conversation_id === conversation_id && m.status === "idle" && m.unread === 1,
    );
    const finished = client.next("run.finished", (m) => m.run_id === run_id);
    await client.request({ type: "approval.respond", approval_id, choice: "once" });
    expect((await finished).status).toBe("completed");
    const done = await idle;
    expect(done).toMatchObject({ pending: 0, unread: 1, preview: { role: "assistant" } });
    expect(done.preview?.text).toContain("Approved (once)");
    // The typed event never carries seq: it is about the list, not the open conversation.
    expect(statuses.every((s) => !("seq" in s))).toBe(true);

    const echoed = other.next(
      "conversation.status",
      (m) => m.conversation_id === conversation_id && m.unread === 0,
    );
    const read = await client.markRead(conversation_id);
    expect(read).toMatchObject({ type: "conversation.status", conversation_id, status: "idle", unread: 0 });
    expect(read.request_id).toBeDefined();
    expect((await echoed).request_id).toBeUndefined();
  });

  it("markRead up to a message: an ID that is not the conversation's is refused with bad_request", async () => {
    const client = await connect();
    const { conversation_id } = await client.request({ type: "conversation.create" });
    const { run_id } = await client.request({ type: "chat.send", conversation_id, text: "hello" });
    await client.next("run.finished", (m) => m.run_id === run_id);
    const history = await client.request({ type: "conversation.open", conversation_id });
    const last = history.messages.at(-1)!;
    expect(await client.markRead(conversation_id, last.message_id)).toMatchObject({ unread: 0 });
    await expect(client.markRead(conversation_id, "m999999")).rejects.toMatchObject({ code: "bad_request" });
  });

  it("a failed run shows failed until the next run starts", async () => {
    const client = await connect();
    const { conversation_id } = await client.request({ type: "conversation.create" });
    const failed = client.next(
      "conversation.status",
      (m) => m.conversation_id === conversation_id && m.status === "failed",
    );
    await client.request({ type: "chat.send", conversation_id, text: "/sim fail" });
    expect(await failed).toMatchObject({ status: "failed", pending: 0 });
  });

  it("archive moves a conversation to the archived list, for every inbox connection; unarchive brings it back", async () => {
    const client = await connect();
    const other = await connect();
    const { conversation_id } = await client.request({ type: "conversation.create", name: "stale" });
    const seen = other.next(
      "conversation.status",
      (m) => m.conversation_id === conversation_id && m.archived,
    );
    expect(await client.archive(conversation_id, true)).toMatchObject({ conversation_id, archived: true });
    expect((await seen).request_id).toBeUndefined();
    const ids = (list: { conversation_id: string }[]) => list.map((c) => c.conversation_id);
    expect(ids(await client.listConversations())).not.toContain(conversation_id);
    const archived = await client.listConversations({ archived: true });
    expect(ids(archived)).toContain(conversation_id);
    expect(archived.every((c) => c.archived === true)).toBe(true);

    expect(await client.archive(conversation_id, false)).toMatchObject({ archived: false });
    expect(ids(await client.listConversations())).toContain(conversation_id);
    expect(ids(await client.listConversations({ archived: true }))).not.toContain(conversation_id);
  });

  it("search finds messages of every conversation, archived ones too, within the limit", async () => {
    const client = await connect();
    const hits: string[] = [];
    for (const name of ["one", "two"]) {
      const { conversation_id } = await client.request({ type: "conversation.create", name });
      const { run_id } = await client.request({
        type: "chat.send",
        conversation_id,
        text: `zanzibar marmalade ${name}`,
      });
      await client.next("run.finished", (m) => m.run_id === run_id);
      hits.push(conversation_id);
    }
    await client.archive(hits[0]!, true);
    const results = await client.search("marmalade");
    // The user's message and the simulator's answer (which quotes it) of each conversation.
    expect([...new Set(results.map((r) => r.conversation_id))].sort()).toEqual([...hits].sort());
    expect(results[0]).toMatchObject({
      conversation_id: hits[1],
      message_id: expect.stringMatching(/^m\d+$/),
    });
    expect(results[0]!.snippet).toContain("marmalade");
    expect(await client.search("marmalade", { limit: 1 })).toHaveLength(1);
    // Text FTS5 cannot parse is searched as words, never an error.
    expect(await client.search('"zanzibar')).toHaveLength(results.length);
    await expect(client.search("marmalade", { limit: 51 })).rejects.toMatchObject({ code: "bad_request" });
  });

  it("without inbox the list is v1's: every conversation, no inbox fields, and its requests are unknown", async () => {
    const plain = await connect([]);
    const inbox = await connect();
    const { conversation_id } = await inbox.request({ type: "conversation.create", name: "hidden" });
    await inbox.archive(conversation_id, true);
    const entry = (await plain.listConversations()).find((c) => c.conversation_id === conversation_id);
    expect(entry).toBeDefined();
    for (const field of ["status", "pending", "unread", "preview", "archived"])
      expect(entry).not.toHaveProperty(field);
    await expect(plain.markRead(conversation_id)).rejects.toMatchObject({ code: "unknown_type" });
  });
});
