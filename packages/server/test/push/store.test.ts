import { afterEach, describe, expect, it } from "vitest";
import { MAX_PUSH_SUBSCRIPTIONS, OWNER, type PushStore } from "../../src/store/push.js";
import { Store } from "../../src/store/store.js";
import { newId } from "../../src/util/ids.js";
import { useTempDirs } from "../helpers.js";

const tempDir = useTempDirs();
const open: Store[] = [];
afterEach(() => {
  for (const s of open.splice(0)) s.close();
});

/** A real SQLite file, migrated. */
function pushStore(dir = tempDir()): { push: PushStore; dir: string } {
  const store = new Store(dir);
  open.push(store);
  return { push: store.push, dir };
}

const sub = (
  endpoint: string,
  extra: Partial<{ id: string; created_by: string; events: string[] }> = {},
) => ({
  id: extra.id ?? newId(),
  endpoint,
  p256dh: "BPub",
  auth: "YXV0aA",
  device_name: "Pixel",
  events: extra.events ?? ["approval", "clarify", "run_finished", "message"],
  created_by: extra.created_by ?? OWNER,
});

describe("PushStore", () => {
  it("persists a subscription across a reopen, with its creator", () => {
    const { push, dir } = pushStore();
    const { row } = push.subscribe(sub("https://push.example.net/a"), 1000);
    expect(row).toMatchObject({
      endpoint: "https://push.example.net/a",
      created_by: "owner",
      created_at: 1000,
    });
    for (const s of open.splice(0)) s.close();
    const again = pushStore(dir).push;
    expect(again.get(row.id)).toEqual(row);
    expect(again.list()).toEqual([row]);
  });

  it("updates a re-subscribed endpoint in place: same id, new keys and events, error cleared", () => {
    const { push } = pushStore();
    const first = push.subscribe(sub("https://push.example.net/a"), 1000).row;
    push.recordError(first.id, "HTTP 500", 1500);
    const second = push.subscribe(
      { ...sub("https://push.example.net/a"), p256dh: "BNew", events: ["approval"] },
      2000,
    );
    expect(second.row.id).toBe(first.id);
    expect(second.row).toMatchObject({
      p256dh: "BNew",
      events: ["approval"],
      created_at: 1000,
      updated_at: 2000,
      last_error: null,
    });
    expect(push.count()).toBe(1);
  });

  it(`keeps at most ${MAX_PUSH_SUBSCRIPTIONS}: the least recently used goes first`, () => {
    const { push } = pushStore();
    const ids: string[] = [];
    for (let i = 0; i < MAX_PUSH_SUBSCRIPTIONS; i++) {
      ids.push(push.subscribe(sub(`https://push.example.net/${i}`), 1000 + i).row.id);
    }
    expect(push.count()).toBe(MAX_PUSH_SUBSCRIPTIONS);
    // The oldest one was delivered to recently: it is in use, so the second oldest goes.
    push.recordSuccess(ids[0]!, 5000);
    const { evicted } = push.subscribe(sub("https://push.example.net/new"), 6000);
    expect(evicted).toEqual([ids[1]]);
    expect(push.count()).toBe(MAX_PUSH_SUBSCRIPTIONS);
    expect(push.get(ids[0]!)).toBeDefined();
    // Re-subscribing an existing endpoint at the limit evicts nothing.
    expect(push.subscribe(sub("https://push.example.net/7"), 7000).evicted).toEqual([]);
    expect(push.count()).toBe(MAX_PUSH_SUBSCRIPTIONS);
  });

  it("lists by creator (a device sees its own), removes, and records the last success and error", () => {
    const { push } = pushStore();
    const mine = push.subscribe(sub("https://push.example.net/a", { created_by: "device-1" }), 1).row;
    push.subscribe(sub("https://push.example.net/b"), 2);
    expect(push.list("device-1").map((r) => r.id)).toEqual([mine.id]);
    expect(push.list()).toHaveLength(2);
    push.recordSuccess(mine.id, 10);
    push.recordError(mine.id, "timeout", 20);
    expect(push.get(mine.id)).toMatchObject({
      last_success_at: 10,
      last_used_at: 10,
      last_error: "timeout",
      last_error_at: 20,
    });
    expect(push.remove(mine.id)).toBe(true);
    expect(push.remove(mine.id)).toBe(false);
    expect(push.list("device-1")).toEqual([]);
  });

  it("removes a revoked device's subscriptions, and at start those of devices that no longer exist", () => {
    const { push } = pushStore();
    push.subscribe(sub("https://push.example.net/owner"), 1);
    push.subscribe(sub("https://push.example.net/a", { created_by: "device-a" }), 2);
    push.subscribe(sub("https://push.example.net/b", { created_by: "device-b" }), 3);
    expect(push.removeCreatedBy("device-a")).toBe(1);
    // device-b is not in the devices table (revoked while the server was down): an orphan.
    expect(push.removeOrphans(OWNER)).toBe(1);
    expect(push.list().map((r) => r.created_by)).toEqual([OWNER]);
  });
});
