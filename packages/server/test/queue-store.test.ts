import { LIMITS } from "@pheby/protocol";
import { afterEach, describe, expect, it } from "vitest";
import { type QueuedRun, QueueStore } from "../src/store/queue.js";
import type { Store } from "../src/store/store.js";
import { useTempDirs } from "./helpers.js";
import { addConversation, openStore } from "./resume-db.js";

const dir = useTempDirs();
const stores: Store[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
});

const C = "c".repeat(32);
const D = "d".repeat(32);

function open(path: string, fresh = true) {
  const store = openStore(path);
  stores.push(store);
  if (fresh) {
    addConversation(store, C);
    addConversation(store, D);
  }
  return { store, queue: new QueueStore(store.db) };
}

const run = (runId: string, conversationId = C, extra: Partial<QueuedRun> = {}): QueuedRun => ({
  runId,
  conversationId,
  text: `text of ${runId}`,
  clientMessageId: null,
  attachmentIds: [],
  queuedAt: 1,
  deviceId: null,
  scheduleId: null,
  ...extra,
});

describe("queue store", () => {
  it("keeps each conversation's runs in the order they were queued, with their positions", () => {
    const { queue } = open(dir());
    expect(queue.enqueue(run("a"))).toBe(1);
    expect(queue.enqueue(run("x", D))).toBe(1);
    expect(queue.enqueue(run("b", C, { clientMessageId: "cm-b", attachmentIds: ["f".repeat(32)] }))).toBe(2);
    expect(queue.enqueue(run("c"))).toBe(3);
    expect(queue.list(C)).toEqual([
      run("a"),
      run("b", C, { clientMessageId: "cm-b", attachmentIds: ["f".repeat(32)] }),
      run("c"),
    ]);
    expect(queue.list(D)).toEqual([run("x", D)]);
    expect(queue.conversations().sort()).toEqual([C, D].sort());
  });

  it("takes them out first-in first-out", () => {
    const { queue } = open(dir());
    for (const id of ["a", "b", "c"]) queue.enqueue(run(id));
    expect(queue.shift(C)?.runId).toBe("a");
    expect(queue.shift(C)?.runId).toBe("b");
    queue.enqueue(run("d"));
    expect(queue.shift(C)?.runId).toBe("c");
    expect(queue.shift(C)?.runId).toBe("d");
    expect(queue.shift(C)).toBeUndefined();
    expect(queue.conversations()).toEqual([]);
  });

  it(`accepts ${LIMITS.queuedRunsPerConversation} runs per conversation and refuses one more`, () => {
    const { queue } = open(dir());
    for (let i = 1; i <= LIMITS.queuedRunsPerConversation; i++) expect(queue.enqueue(run(`r${i}`))).toBe(i);
    expect(queue.enqueue(run("one-too-many"))).toBeNull();
    expect(queue.list(C)).toHaveLength(LIMITS.queuedRunsPerConversation);
    expect(queue.enqueue(run("elsewhere", D))).toBe(1);
    queue.remove(C, "r7");
    expect(queue.enqueue(run("fits-again"))).toBe(LIMITS.queuedRunsPerConversation);
  });

  it("removes one queued run of its own conversation only", () => {
    const { queue } = open(dir());
    for (const id of ["a", "b", "c"]) queue.enqueue(run(id));
    expect(queue.remove(D, "b")).toBe(false);
    expect(queue.remove(C, "b")).toBe(true);
    expect(queue.remove(C, "b")).toBe(false);
    expect(queue.list(C).map((r) => r.runId)).toEqual(["a", "c"]);
  });

  it("clears a deleted conversation's queue", () => {
    const { queue } = open(dir());
    queue.enqueue(run("a"));
    queue.enqueue(run("b"));
    queue.enqueue(run("x", D));
    expect(queue.clear(C)).toBe(2);
    expect(queue.list(C)).toEqual([]);
    expect(queue.list(D)).toHaveLength(1);
  });

  it("survives a restart, order included", () => {
    const path = dir();
    const first = open(path);
    for (const id of ["a", "b", "c"]) first.queue.enqueue(run(id));
    first.queue.shift(C);
    first.store.close();
    const { queue } = open(path, false);
    expect(queue.list(C).map((r) => r.runId)).toEqual(["b", "c"]);
    expect(queue.enqueue(run("d"))).toBe(3);
  });

  it("refuses a run of a conversation the store does not have", () => {
    const { queue } = open(dir());
    expect(() => queue.enqueue(run("a", "e".repeat(32)))).toThrow(/FOREIGN KEY/);
  });
});
