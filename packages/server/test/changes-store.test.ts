// The changes extension's schema step (v15) on a database of the server before it, and its store:
// a conversation's base is set once and never moves; its fingerprint; both go with the conversation.
import { rmSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { CHANGES_MIGRATION } from "../src/store/changes.js";
import { MIGRATIONS, migrate } from "../src/store/migrations.js";
import { DB_FILE, Store } from "../src/store/store.js";
import { tempDir } from "./helpers.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("the changes migration and store", () => {
  it("is v15, brings an older database up, and keeps a conversation's first base", () => {
    expect(MIGRATIONS.indexOf(CHANGES_MIGRATION)).toBe(14); // step 14 → schema v15
    const dir = tempDir();
    dirs.push(dir);
    const db = new Database(join(dir, DB_FILE));
    const before = MIGRATIONS.indexOf(CHANGES_MIGRATION);
    for (let v = 0; v < before; v++) db.exec(MIGRATIONS[v]!);
    db.pragma(`user_version = ${before}`);
    const conv = "a".repeat(32);
    db.prepare("INSERT INTO conversations (id, name, source, created_at) VALUES (?, 'Old', 'acp', 0)").run(
      conv,
    );
    migrate(db);
    expect(db.pragma("user_version", { simple: true })).toBe(15);
    db.close();

    const store = new Store(dir);
    try {
      // An older conversation has no base until its first changes.list records HEAD.
      expect(store.changes.base(conv)).toBeUndefined();
      expect(store.changes.setBase(conv, "1".repeat(40))).toBe("1".repeat(40));
      expect(store.changes.setBase(conv, "2".repeat(40))).toBe("1".repeat(40));
      expect(store.changes.fingerprint(conv)).toBeNull();
      store.changes.setFingerprint(conv, "f1");
      expect(store.changes.fingerprint(conv)).toBe("f1");
      store.deleteConversation(conv, 1);
      expect(store.changes.base(conv)).toBeUndefined();
    } finally {
      store.close();
    }
  });
});
