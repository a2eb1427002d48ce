import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { MIGRATIONS } from "../../src/store/migrations.js";
import { MAX_PUSH_SUBSCRIPTIONS, PUSH_DEVICE_MIGRATION, type PushStore } from "../../src/store/push.js";
import { DB_FILE, Store } from "../../src/store/store.js";
import { newId } from "../../src/util/ids.js";
import { useTempDirs } from "../helpers.js";

const tempDir = useTempDirs();
const open: Store[] = [];
afterEach(() => {
  for (const s of open.splice(0)) s.close();
});

/** A real SQLite file, migrated, with paired devices `devices` (rows only: no secret needed here). */
function pushStore(dir = tempDir(), devices: string[] = []): { push: PushStore; store: Store; dir: string } {
  const store = new Store(dir);
  open.push(store);
  for (const id of devices) addDevice(store.db, id);
  return { push: store.push, store, dir };
}

function addDevice(db: Database.Database, id: string): void {
  db.prepare(
    "INSERT INTO devices (id, name, secret_hash, created_at, last_seen_at) VALUES (?, NULL, ?, 0, NULL)",
  ).run(id, Buffer.from(id));
}

const sub = (endpoint: string, extra: Partial<{ id: string; device_id: string; events: string[] }> = {}) => ({
  id: extra.id ?? newId(),
  endpoint,
  p256dh: "BPub",
  auth: "YXV0aA",
  device_name: "Pixel",
  events: extra.events ?? ["approval", "clarify", "run_finished", "message"],
  device_id: extra.device_id ?? null,
});

describe("PushStore", () => {
  it("persists a subscription across a reopen, with its creator", () => {
    const { push, dir } = pushStore();
    const { row } = push.subscribe(sub("https://push.example.net/a"), 1000);
    expect(row).toMatchObject({
      endpoint: "https://push.example.net/a",
      device_id: null,
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
    const { push } = pushStore(undefined, ["device-1"]);
    const mine = push.subscribe(sub("https://push.example.net/a", { device_id: "device-1" }), 1).row;
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

  it("deleting a device deletes its subscriptions (a cascading foreign key), and none can name a missing device", () => {
    const { push, store } = pushStore(undefined, ["device-a", "device-b"]);
    push.subscribe(sub("https://push.example.net/owner"), 1);
    push.subscribe(sub("https://push.example.net/a", { device_id: "device-a" }), 2);
    push.subscribe(sub("https://push.example.net/b", { device_id: "device-b" }), 3);
    expect(store.devices.delete("device-a")).toBe(true);
    expect(push.list().map((r) => r.device_id)).toEqual([null, "device-b"]);
    // The operator's revoke-all deletes every device row: their subscriptions go with them.
    store.devices.deleteAll();
    expect(push.list().map((r) => r.device_id)).toEqual([null]);
    // A subscribe that finishes after its device was deleted cannot store an orphan.
    expect(() => push.subscribe(sub("https://push.example.net/late", { device_id: "device-a" }), 4)).toThrow(
      /FOREIGN KEY/,
    );
    expect(push.count()).toBe(1);
  });
});

describe("the migration that binds subscriptions to their device", () => {
  it("keeps the owner's and live devices' subscriptions, drops orphans, and cascades from then on", () => {
    const dir = tempDir();
    // A database one step before the migration, as the previous release left it.
    const step = MIGRATIONS.indexOf(PUSH_DEVICE_MIGRATION);
    expect(step).toBeGreaterThan(0);
    const old = new Database(join(dir, DB_FILE));
    old.pragma("foreign_keys = ON");
    for (const sql of MIGRATIONS.slice(0, step)) old.exec(sql);
    old.pragma(`user_version = ${step}`);
    addDevice(old, "device-live");
    const insert = old.prepare(
      `INSERT INTO push_subscriptions (id, endpoint, p256dh, auth, device_name, events, created_by,
         created_at, updated_at, last_used_at, last_success_at, last_error, last_error_at)
       VALUES (?, ?, 'BPub', 'YXV0aA', 'Pixel', '["approval"]', ?, 1, 2, 3, 4, 'HTTP 500', 5)`,
    );
    insert.run("s-owner", "https://push.example.net/owner", "owner");
    insert.run("s-live", "https://push.example.net/live", "device-live");
    insert.run("s-orphan", "https://push.example.net/orphan", "device-revoked-while-down");
    old.close();

    const { push, store } = pushStore(dir);
    expect(push.list().map((r) => [r.id, r.device_id])).toEqual([
      ["s-live", "device-live"],
      ["s-owner", null],
    ]);
    expect(push.get("s-live")).toEqual({
      id: "s-live",
      endpoint: "https://push.example.net/live",
      p256dh: "BPub",
      auth: "YXV0aA",
      device_name: "Pixel",
      events: ["approval"],
      device_id: "device-live",
      created_at: 1,
      updated_at: 2,
      last_used_at: 3,
      last_success_at: 4,
      last_error: "HTTP 500",
      last_error_at: 5,
    });
    expect(store.db.pragma("foreign_key_check")).toEqual([]);
    store.devices.delete("device-live");
    expect(push.list().map((r) => r.id)).toEqual(["s-owner"]);
  });
});
