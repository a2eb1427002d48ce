// The inbox's schema step on a database that already holds history: existing messages are indexed
// for search and count as read for every existing reader (the owner and each paired device).
import { rmSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { INBOX_MIGRATION } from "../src/store/inbox.js";
import { MIGRATIONS, migrate } from "../src/store/migrations.js";
import { DB_FILE, Store } from "../src/store/store.js";
import { tempDir } from "./helpers.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("the inbox migration", () => {
  it("indexes the existing history and starts every existing reader with it read", () => {
    const dir = tempDir();
    dirs.push(dir);
    const db = new Database(join(dir, DB_FILE));
    // The schema as the server before the inbox left it.
    const before = MIGRATIONS.indexOf(INBOX_MIGRATION);
    for (let v = 0; v < before; v++) db.exec(MIGRATIONS[v]!);
    db.pragma(`user_version = ${before}`);
    const conv = "a".repeat(32);
    db.prepare(
      "INSERT INTO conversations (id, name, source, created_at) VALUES (?, 'Old', 'simulator', 0)",
    ).run(conv);
    const insert = db.prepare(
      "INSERT INTO messages (conversation_id, role, text, ts, run_id) VALUES (?, ?, ?, 0, 'r1')",
    );
    insert.run(conv, "user", "an old question about giraffes");
    insert.run(conv, "assistant", "an old answer about giraffes");
    db.prepare(
      "INSERT INTO devices (id, name, secret_hash, created_at) VALUES ('d1', 'Phone', x'00', 0)",
    ).run();
    migrate(db);
    db.close();

    const store = new Store(dir);
    try {
      expect(store.inbox.search("giraffes", 20).map((h) => h.snippet)).toEqual([
        "an old answer about giraffes",
        "an old question about giraffes",
      ]);
      expect(store.inbox.readers()).toEqual(["owner", "d1"]);
      expect(store.inbox.unread("owner", conv)).toBe(0);
      expect(store.inbox.unread("d1", conv)).toBe(0);
      // A new answer is unread for both; a device paired now starts with it read.
      const id = store.addMessage(conv, "assistant", "a new answer", 1, "r2");
      expect(store.inbox.unread("owner", conv)).toBe(1);
      store.devices.insert({
        id: "d2",
        name: null,
        secret_hash: Buffer.from([1]),
        created_at: 1,
        last_seen_at: null,
      });
      expect(store.inbox.unread("d2", conv)).toBe(0);
      expect(store.inbox.unread("d1", conv)).toBe(1);
      store.inbox.markRead("d1", conv, id);
      expect(store.inbox.unread("d1", conv)).toBe(0);
      // Marks never go back.
      store.inbox.markRead("d1", conv, id - 1);
      expect(store.inbox.unread("d1", conv)).toBe(0);
      expect(store.inbox.unreadTotal("owner")).toBe(1);
      store.inbox.setArchived(conv, true);
      expect(store.inbox.unreadTotal("owner")).toBe(0);
    } finally {
      store.close();
    }
  });
});
