import { join } from "node:path";
import { LIMITS, type ServerMessage } from "@pheby/protocol";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ProtocolError } from "../src/errors.js";
import { IdempotentRequests } from "../src/resume/idempotency.js";
import { OWNER_SENDER, SENT_REQUEST_TTL_MS, type SentKey, SentRequests } from "../src/store/sent-requests.js";
import { DB_FILE, type Store } from "../src/store/store.js";
import { createConversation, helloWith, startServer, useTempDirs } from "./helpers.js";
import { openStore } from "./resume-db.js";

const dir = useTempDirs();
const stores: Store[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
});

const C = "c".repeat(32);
const clock = { t: 1_000_000, now: () => clock.t };

function open(path: string) {
  const store = openStore(path);
  stores.push(store);
  const sent = new SentRequests(store.db, clock);
  return { store, sent, requests: new IdempotentRequests(sent) };
}

const send = (clientMessageId: string, scope = C): SentKey => ({
  kind: "chat.send",
  scope,
  clientMessageId,
});
const accepted = (run_id: string): ServerMessage => ({ type: "run.accepted", conversation_id: C, run_id });

describe("sent requests store", () => {
  it("remembers a reply without its request_id, scoped to kind and conversation", () => {
    const { sent } = open(dir());
    sent.remember(send("m1"), { reply: { ...accepted("r1"), request_id: "q1" } }, OWNER_SENDER);
    expect(sent.recall(send("m1"))).toEqual({ reply: accepted("r1") });
    expect(sent.recall(send("m1", "d".repeat(32)))).toBeUndefined();
    expect(sent.recall({ kind: "conversation.create", scope: "", clientMessageId: "m1" })).toBeUndefined();
    expect(sent.recall(send("m2"))).toBeUndefined();
  });

  it("remembers for 24 hours: the last millisecond still recalls, 24 h later it is gone", () => {
    const { sent } = open(dir());
    const at = clock.t;
    sent.remember(send("m1"), { error: { code: "bad_request", message: "no" } }, OWNER_SENDER);
    clock.t = at + SENT_REQUEST_TTL_MS - 1;
    expect(sent.recall(send("m1"))).toEqual({ error: { code: "bad_request", message: "no" } });
    clock.t = at + SENT_REQUEST_TTL_MS;
    expect(sent.recall(send("m1"))).toBeUndefined();
    // An expired ID is a fresh request: its new outcome replaces the old one.
    sent.remember(send("m1"), { reply: accepted("r2") }, OWNER_SENDER);
    expect(sent.recall(send("m1"))).toEqual({ reply: accepted("r2") });
  });

  it("survives a restart", () => {
    const path = dir();
    const first = open(path);
    first.sent.remember(send("m1"), { reply: accepted("r1") }, OWNER_SENDER);
    first.store.close();
    expect(open(path).sent.recall(send("m1"))).toEqual({ reply: accepted("r1") });
  });

  it("sweeps only what is older than 24 hours", () => {
    const { store, sent } = open(dir());
    const at = clock.t;
    sent.remember(send("old"), { reply: accepted("r1") }, OWNER_SENDER);
    clock.t = at + 1000;
    sent.remember(send("new"), { reply: accepted("r2") }, OWNER_SENDER);
    clock.t = at + SENT_REQUEST_TTL_MS;
    expect(sent.sweep()).toBe(1);
    expect(store.db.prepare("SELECT client_message_id FROM sent_requests").all()).toEqual([
      { client_message_id: "new" },
    ]);
  });
});

describe("idempotent requests", () => {
  it("does the work once; a repeat gets the first reply", async () => {
    const { requests } = open(dir());
    let calls = 0;
    const work = () => accepted(`run-${++calls}`);
    expect(await requests.once(send("m1"), OWNER_SENDER, work)).toEqual({ reply: accepted("run-1") });
    expect(calls).toBe(1);
    expect(await requests.once(send("m1"), OWNER_SENDER, work)).toEqual({ reply: accepted("run-1") });
    expect(calls).toBe(1);
    // Another ID, or the same ID in another conversation, is another request.
    await requests.once(send("m2"), OWNER_SENDER, work);
    await requests.once(send("m1", "d".repeat(32)), OWNER_SENDER, work);
    expect(calls).toBe(3);
  });

  it("remembers a permanent refusal", async () => {
    const { requests } = open(dir());
    let calls = 0;
    const work = () => {
      calls++;
      throw new ProtocolError("bad_request", "attachment_ids are not uploads of this conversation");
    };
    const error = { code: "bad_request", message: "attachment_ids are not uploads of this conversation" };
    expect(await requests.once(send("m1"), OWNER_SENDER, work)).toEqual({ error });
    expect(calls).toBe(1);
    expect(await requests.once(send("m1"), OWNER_SENDER, work)).toEqual({ error });
    expect(calls).toBe(1);
  });

  it.each(["run_active", "rate_limited", "internal_error"] as const)(
    "does not remember the transient refusal %s: the retry is tried afresh",
    async (code) => {
      const { requests } = open(dir());
      const refuse = () => {
        throw new ProtocolError(code, "not now");
      };
      await expect(requests.once(send("m1"), OWNER_SENDER, refuse)).rejects.toMatchObject({ code });
      const retry = vi.fn(() => accepted("r1"));
      expect(await requests.once(send("m1"), OWNER_SENDER, retry)).toEqual({ reply: accepted("r1") });
      expect(retry).toHaveBeenCalledOnce();
    },
  );

  it("does not remember an unexpected fault", async () => {
    const { requests } = open(dir());
    const fault = new TypeError("boom");
    await expect(
      requests.once(send("m1"), OWNER_SENDER, () => {
        throw fault;
      }),
    ).rejects.toBe(fault);
    const retry = vi.fn(() => accepted("r1"));
    expect(await requests.once(send("m1"), OWNER_SENDER, retry)).toEqual({ reply: accepted("r1") });
    expect(retry).toHaveBeenCalledOnce();
  });

  it("a repeat that arrives while the first is still running waits for it instead of doing the work again", async () => {
    const { requests } = open(dir());
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let calls = 0;
    const work = async () => {
      calls++;
      await gate;
      return accepted("r1");
    };
    const first = requests.once(send("m1"), OWNER_SENDER, work);
    const second = requests.once(send("m1"), OWNER_SENDER, work);
    release();
    expect(await first).toEqual({ reply: accepted("r1") });
    expect(await second).toEqual({ reply: accepted("r1") });
    expect(calls).toBe(1);
  });

  it("a repeat waiting on a first try that fails transiently then tries itself", async () => {
    const { requests } = open(dir());
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const first = requests.once(send("m1"), OWNER_SENDER, async () => {
      await gate;
      throw new ProtocolError("run_active", "busy");
    });
    const retry = vi.fn(() => accepted("r2"));
    const second = requests.once(send("m1"), OWNER_SENDER, retry);
    release();
    await expect(first).rejects.toMatchObject({ code: "run_active" });
    expect(await second).toEqual({ reply: accepted("r2") });
    expect(retry).toHaveBeenCalledOnce();
  });

  it("a retry after a restart gets the outcome from before it", async () => {
    const path = dir();
    const first = open(path);
    await first.requests.once(send("m1"), OWNER_SENDER, () => accepted("r1"));
    first.store.close();
    const { requests } = open(path);
    const retry = vi.fn(() => accepted("r2"));
    expect(await requests.once(send("m1"), OWNER_SENDER, retry)).toEqual({ reply: accepted("r1") });
    expect(retry).not.toHaveBeenCalled();
  });
});

describe("bounded per sender", () => {
  const LIMIT = LIMITS.clientMessageIdsPerPrincipal;

  /** `n` remembered sends of `principal`, one transaction through the store's own statement. */
  function fill(sent: SentRequests, store: Store, principal: string, n: number, prefix = "bulk") {
    store.db.transaction(() => {
      for (let i = 0; i < n; i++) {
        clock.t++;
        sent.remember(send(`${prefix}-${i}`), { reply: accepted(`r${i}`) }, principal);
      }
    })();
  }
  const held = (store: Store, principal: string) =>
    store.db.prepare("SELECT count(*) FROM sent_requests WHERE principal = ?").pluck().get(principal);

  it(`keeps ${LIMIT} per sender: the next one evicts that sender's oldest, and nobody else's`, () => {
    const { store, sent } = open(dir());
    fill(sent, store, "device-b", 3, "b");
    fill(sent, store, OWNER_SENDER, LIMIT - 1);
    sent.remember(send("last-kept"), { reply: accepted("r-last") }, OWNER_SENDER);
    expect(held(store, OWNER_SENDER)).toBe(LIMIT);
    expect(sent.recall(send("bulk-0"))).toEqual({ reply: accepted("r0") });

    clock.t++;
    sent.remember(send("one-more"), { reply: accepted("r-more") }, OWNER_SENDER);
    expect(held(store, OWNER_SENDER)).toBe(LIMIT);
    expect(sent.recall(send("bulk-0"))).toBeUndefined(); // the oldest went
    expect(sent.recall(send("bulk-1"))).toEqual({ reply: accepted("r1") });
    expect(sent.recall(send("one-more"))).toEqual({ reply: accepted("r-more") });
    expect(held(store, "device-b")).toBe(3);
    // Replacing one of its own rows adds none: nothing more is evicted.
    sent.remember(send("one-more"), { reply: accepted("r-again") }, OWNER_SENDER);
    expect(sent.recall(send("bulk-1"))).toEqual({ reply: accepted("r1") });
    expect(held(store, OWNER_SENDER)).toBe(LIMIT);
  });

  it("counts rows from before a restart", () => {
    const path = dir();
    const first = open(path);
    fill(first.sent, first.store, OWNER_SENDER, LIMIT);
    first.store.close();
    const { store, sent } = open(path);
    clock.t++;
    sent.remember(send("after-restart"), { reply: accepted("r-new") }, OWNER_SENDER);
    expect(held(store, OWNER_SENDER)).toBe(LIMIT);
    expect(sent.recall(send("bulk-0"))).toBeUndefined();
    expect(sent.recall(send("bulk-1"))).toEqual({ reply: accepted("r1") });
  });
});

describe("over a real socket", () => {
  it("a chat.send to a conversation that never existed is refused and leaves no row; a deleted one's is kept", async () => {
    const ts = await startServer();
    try {
      const client = await helloWith(ts, ["resume"]);
      const refused = await client.request(
        { type: "chat.send", conversation_id: "0".repeat(32), text: "hi", client_message_id: "never-1" },
        "run.accepted",
      );
      expect(refused).toMatchObject({ type: "error", error: { code: "conversation_not_found" } });
      const conv = await createConversation(client);
      await client.ok({ type: "conversation.delete", conversation_id: conv }, "conversation.deleted");
      const gone = await client.request(
        { type: "chat.send", conversation_id: conv, text: "hi", client_message_id: "deleted-1" },
        "run.accepted",
      );
      expect(gone).toMatchObject({ type: "error", error: { code: "conversation_not_found" } });
      client.close();
      const db = new Database(join(ts.dataDir, DB_FILE), { readonly: true });
      try {
        const rows = db.prepare("SELECT kind, scope, client_message_id, principal FROM sent_requests").all();
        expect(rows).toEqual([
          { kind: "chat.send", scope: conv, client_message_id: "deleted-1", principal: OWNER_SENDER },
        ]);
      } finally {
        db.close();
      }
    } finally {
      await ts.cleanup();
    }
  });
});
