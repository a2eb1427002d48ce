import type { ServerMessage } from "@pheby/protocol";
import { afterEach, describe, expect, it, vi } from "vitest";
import { DELTAS_PER_FSYNC, ResumeLog, type ResumeLogLimits } from "../src/store/resume-log.js";
import type { Store } from "../src/store/store.js";
import { useTempDirs } from "./helpers.js";
import { openStore } from "./resume-db.js";

const dir = useTempDirs();
const stores: Store[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
});

function open(path: string, limits?: ResumeLogLimits): { store: Store; log: ResumeLog } {
  const store = openStore(path);
  stores.push(store);
  return { store, log: new ResumeLog(store.db, limits) };
}

const C = "c".repeat(32);
const D = "d".repeat(32);
const TS = "2026-09-02T18:00:00.000Z";

const renamed = (name: string): ServerMessage => ({ type: "conversation.renamed", conversation_id: C, name });
const delta = (text: string, message_id = "draft-1"): ServerMessage => ({
  type: "message.delta",
  conversation_id: C,
  message_id,
  text,
  ts: TS,
});
const tool = (status: "running" | "completed"): ServerMessage => ({
  type: "tool.event",
  conversation_id: C,
  run_id: "r1",
  tool_call_id: "t1",
  tool_name: "shell",
  status,
  ...(status === "running" ? {} : { duration_ms: 5 }),
  ts: TS,
});

/** The bytes the log counts for an event: its JSON in UTF-8. */
const size = (event: ServerMessage) => Buffer.byteLength(JSON.stringify(event));

function events(log: ResumeLog, conversationId: string, after: number) {
  const window = log.after(conversationId, after);
  if (!window.complete) throw new Error(`not complete: ${window.reason}`);
  return window.events.map((e) => [e.seq, e.event]);
}

describe("resume log: seq", () => {
  it("gives each conversation its own seq from 1, and 0 before its first event", () => {
    const { log } = open(dir());
    expect(log.lastSeq(C)).toBe(0);
    expect(log.append(C, renamed("a"))).toBe(1);
    expect(log.append(C, renamed("b"))).toBe(2);
    expect(log.append(D, renamed("x"))).toBe(1);
    expect(log.append(C, renamed("c"))).toBe(3);
    expect(log.lastSeq(C)).toBe(3);
    expect(log.lastSeq(D)).toBe(1);
  });

  it("keeps growing across a restart, and still holds what was logged before it", () => {
    const path = dir();
    const first = open(path);
    first.log.append(C, renamed("a"));
    first.log.append(C, renamed("b"));
    first.store.close();

    const { log } = open(path);
    expect(log.lastSeq(C)).toBe(2);
    expect(log.append(C, renamed("c"))).toBe(3);
    expect(events(log, C, 0)).toEqual([
      [1, renamed("a")],
      [2, renamed("b")],
      [3, renamed("c")],
    ]);
  });

  it("stores the event every connection shares: no request_id, no seq", () => {
    const { log } = open(dir());
    log.append(C, { ...renamed("a"), request_id: "r9" });
    log.append(C, { ...renamed("b"), seq: 77 } as unknown as ServerMessage);
    expect(events(log, C, 0)).toEqual([
      [1, renamed("a")],
      [2, renamed("b")],
    ]);
  });

  it("returns the feature an event needs and other extensions' fields, counted in its bytes", () => {
    const { store, log } = open(dir());
    const fields = { expiry: { expires_at: TS } };
    log.append(C, renamed("a"), { feature: "queue" });
    log.append(C, renamed("b"), { fields });
    log.append(C, renamed("c"), { fields: {} });
    const window = log.after(C, 0);
    expect(window.complete && window.events.map((e) => [e.feature, e.fields])).toEqual([
      ["queue", null],
      [null, fields],
      [null, null],
    ]);
    const { bytes } = store.db.prepare("SELECT bytes FROM replay_counters").get() as { bytes: number };
    expect(bytes).toBe(3 * size(renamed("a")) + Buffer.byteLength(JSON.stringify(fields)));
  });
});

describe("resume log: what a client missed", () => {
  it("is complete from the last seq (nothing missed) and from any issued seq", () => {
    const { log } = open(dir());
    for (const n of ["a", "b", "c"]) log.append(C, renamed(n));
    expect(log.after(C, 3)).toEqual({ complete: true, lastSeq: 3, events: [] });
    expect(events(log, C, 1)).toEqual([
      [2, renamed("b")],
      [3, renamed("c")],
    ]);
    expect(log.after(D, 0)).toEqual({ complete: true, lastSeq: 0, events: [] });
  });

  it("cannot resume from a seq it never issued", () => {
    const { log } = open(dir());
    log.append(C, renamed("a"));
    for (const seq of [2, 1000, -1, 0.5, Number.NaN]) {
      expect(log.after(C, seq)).toEqual({ complete: false, lastSeq: 1, reason: "unknown" });
    }
    expect(log.after(D, 1)).toEqual({ complete: false, lastSeq: 0, reason: "unknown" });
  });
});

describe("resume log: deltas", () => {
  it("updates the draft in place while deltas follow each other, with the latest seq and text", () => {
    const { store, log } = open(dir());
    log.append(C, renamed("start"));
    expect(log.append(C, delta("a"))).toBe(2);
    expect(log.append(C, delta("ab"))).toBe(3);
    expect(log.append(C, delta("abc"))).toBe(4);
    const rows = store.db.prepare("SELECT COUNT(*) AS n FROM replay_events").get() as { n: number };
    expect(rows.n).toBe(2);
    // A client that saw any of the collapsed deltas, or none, is sent the latest draft.
    for (const seen of [1, 2, 3]) expect(events(log, C, seen)).toEqual([[4, delta("abc")]]);
    expect(events(log, C, 4)).toEqual([]);
  });

  it("starts a new draft row after any other event, so replayed text stays on its side of it", () => {
    const { log } = open(dir());
    log.append(C, delta("a"));
    log.append(C, delta("ab"));
    log.append(C, tool("running"));
    log.append(C, delta("abc"));
    log.append(C, delta("abcd"));
    log.append(C, tool("completed"));
    expect(events(log, C, 0)).toEqual([
      [2, delta("ab")],
      [3, tool("running")],
      [5, delta("abcd")],
      [6, tool("completed")],
    ]);
  });

  it("does not merge the deltas of two messages", () => {
    const { log } = open(dir());
    log.append(C, delta("a", "m1"));
    log.append(C, delta("b", "m2"));
    log.append(C, delta("bc", "m2"));
    expect(events(log, C, 0)).toEqual([
      [1, delta("a", "m1")],
      [3, delta("bc", "m2")],
    ]);
  });

  it("counts a draft updated in place as one event, and its bytes as its latest text", () => {
    const limits = { maxEvents: 2, maxBytes: 1_000_000 };
    const { store, log } = open(dir(), limits);
    log.append(C, renamed("a"));
    let text = "";
    for (let i = 0; i < 50; i++) {
      text += "x";
      log.append(C, delta(text));
    }
    expect(events(log, C, 0)).toEqual([
      [1, renamed("a")],
      [51, delta(text)],
    ]);
    const counter = store.db.prepare("SELECT events, bytes FROM replay_counters").get();
    expect(counter).toEqual({ events: 2, bytes: size(renamed("a")) + size(delta(text)) });
  });
});

describe("resume log: bounds", () => {
  it("holds exactly maxEvents; one more evicts the oldest and raises the watermark", () => {
    const { log } = open(dir(), { maxEvents: 5, maxBytes: 1_000_000 });
    for (const n of ["1", "2", "3", "4", "5"]) log.append(C, renamed(n));
    expect(events(log, C, 0)).toHaveLength(5);
    log.append(C, renamed("6"));
    expect(log.after(C, 0)).toEqual({ complete: false, lastSeq: 6, reason: "evicted" });
    expect(events(log, C, 1).map(([seq]) => seq)).toEqual([2, 3, 4, 5, 6]);
  });

  it("holds exactly maxBytes of event JSON (UTF-8); one byte more evicts the oldest", () => {
    // Names of multi-byte characters: the bound is in bytes, not characters.
    const a = renamed("é".repeat(10));
    const b = renamed("ü".repeat(20));
    const { log } = open(dir(), { maxEvents: 100, maxBytes: size(a) + size(b) });
    log.append(C, a);
    log.append(C, b);
    expect(events(log, C, 0)).toHaveLength(2);

    const path = dir();
    const tight = open(path, { maxEvents: 100, maxBytes: size(a) + size(b) - 1 });
    tight.log.append(C, a);
    tight.log.append(C, b);
    expect(tight.log.after(C, 0)).toEqual({ complete: false, lastSeq: 2, reason: "evicted" });
    expect(events(tight.log, C, 1)).toEqual([[2, b]]);
  });

  it("an event larger than the bound evicts everything, itself included, without breaking the seq", () => {
    const { log } = open(dir(), { maxEvents: 100, maxBytes: 200 });
    log.append(C, renamed("a"));
    log.append(C, delta("y".repeat(500)));
    expect(log.after(C, 1)).toEqual({ complete: false, lastSeq: 2, reason: "evicted" });
    expect(log.after(C, 2)).toEqual({ complete: true, lastSeq: 2, events: [] });
    // The next delta of that message cannot update a row that is gone: it is a new row.
    expect(log.append(C, delta("yy"))).toBe(3);
    expect(events(log, C, 2)).toEqual([[3, delta("yy")]]);
  });

  it("keeps counting bytes correctly across a restart", () => {
    const path = dir();
    const limits = { maxEvents: 100, maxBytes: 3 * size(renamed("a")) };
    const first = open(path, limits);
    first.log.append(C, renamed("a"));
    first.log.append(C, renamed("b"));
    first.store.close();
    const { log } = open(path, limits);
    log.append(C, renamed("c"));
    expect(events(log, C, 0)).toHaveLength(3);
    log.append(C, renamed("d"));
    expect(events(log, C, 1).map(([seq]) => seq)).toEqual([2, 3, 4]);
  });

  it("bounds each conversation separately", () => {
    const { log } = open(dir(), { maxEvents: 2, maxBytes: 1_000_000 });
    log.append(C, renamed("a"));
    log.append(D, renamed("x"));
    log.append(C, renamed("b"));
    log.append(D, renamed("y"));
    expect(events(log, C, 0)).toHaveLength(2);
    expect(events(log, D, 0)).toHaveLength(2);
  });
});

describe("resume log: deleted conversations", () => {
  it("forgets the events but never reissues a seq, also after a restart", () => {
    const path = dir();
    const first = open(path);
    first.log.append(C, renamed("a"));
    first.log.append(C, renamed("b"));
    first.log.forget(C);
    expect(first.log.after(C, 0)).toEqual({ complete: false, lastSeq: 2, reason: "evicted" });
    expect(first.log.after(C, 2)).toEqual({ complete: true, lastSeq: 2, events: [] });
    first.store.close();

    const { store, log } = open(path);
    expect(store.db.prepare("SELECT COUNT(*) AS n FROM replay_events").get()).toEqual({ n: 0 });
    // Were the ID ever used again, its seq would go on from where it was.
    expect(log.append(C, renamed("c"))).toBe(3);
    expect(log.after(C, 1).complete).toBe(false);
    expect(events(log, C, 2)).toEqual([[3, renamed("c")]]);
  });

  it("forgetting a conversation without events is harmless", () => {
    const { log } = open(dir());
    log.forget(C);
    expect(log.append(C, renamed("a"))).toBe(1);
  });
});

describe("resume log: fsyncs", () => {
  /** The synchronous level of each commit of `append`s, read from the pragma calls around it. */
  function syncLevels(store: Store, log: ResumeLog, events: ServerMessage[]): string[] {
    const pragma = vi.spyOn(store.db, "pragma");
    const levels = events.map((event) => {
      pragma.mockClear();
      log.append(C, event);
      const set = pragma.mock.calls.map(([source]) => source).filter((s) => s.startsWith("synchronous"));
      return set[0] ?? "synchronous = FULL (unchanged)";
    });
    pragma.mockRestore();
    return levels;
  }

  it(`commits a run of deltas without an fsync except every ${DELTAS_PER_FSYNC}th; other events always fsync`, () => {
    const { store, log } = open(dir());
    const deltas = Array.from({ length: 2 * DELTAS_PER_FSYNC }, (_, i) => delta("x".repeat(i + 1)));
    const levels = syncLevels(store, log, [renamed("a"), ...deltas, tool("running"), delta("y")]);
    const lazy = "synchronous = NORMAL";
    const durable = "synchronous = FULL (unchanged)";
    expect(levels[0]).toBe(durable);
    const run = levels.slice(1, 1 + deltas.length);
    expect(run.filter((l) => l === durable)).toHaveLength(2);
    expect(run[DELTAS_PER_FSYNC - 1]).toBe(durable);
    expect(run[2 * DELTAS_PER_FSYNC - 1]).toBe(durable);
    expect(levels.at(-2)).toBe(durable);
    // The count starts over after a durable event.
    expect(levels.at(-1)).toBe(lazy);
    expect(store.db.pragma("synchronous", { simple: true })).toBe(2);
  });

  it("puts synchronous=FULL back even when the write fails", () => {
    const { store, log } = open(dir());
    store.db.exec("DROP TABLE replay_events");
    expect(() => log.append(C, delta("x"))).toThrow(/replay_events/);
    expect(store.db.pragma("synchronous", { simple: true })).toBe(2);
  });

  it("after a crash, moves a conversation's seq past every delta seq that may have been lost", () => {
    const { log } = open(dir());
    log.append(C, renamed("a"));
    log.append(C, delta("x"));
    log.skipLost(C);
    log.skipLost(D); // nothing logged there: nothing to skip
    expect(log.lastSeq(C)).toBe(2 + DELTAS_PER_FSYNC);
    expect(log.lastSeq(D)).toBe(0);
    const next = log.append(C, renamed("b"));
    expect(next).toBe(3 + DELTAS_PER_FSYNC);
    // A client that saw a delta the disk lost resumes with what happened after the restart.
    for (const seen of [2, 3, 1 + DELTAS_PER_FSYNC])
      expect(events(log, C, seen)).toEqual([[next, renamed("b")]]);
  });
});
