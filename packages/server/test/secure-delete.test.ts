// A deleted conversation leaves no readable text on disk: its rows are zeroed (secure_delete),
// its tombstone keeps no name, the WAL that held earlier versions of its pages is emptied, and the
// search index (inbox) holds none of its words (FTS5's secure-delete).
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { FEATURE_INBOX, FEATURE_RESUME } from "@pheby/protocol";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { DB_FILE } from "../src/store/store.js";
import { createConversation, RawClient, send, startServer } from "./helpers.js";

/** The raw bytes of the database file and of its WAL, as a local reader of the files sees them. */
function onDisk(dataDir: string): Buffer {
  const file = join(dataDir, DB_FILE);
  const wal = `${file}-wal`;
  return Buffer.concat([readFileSync(file), existsSync(wal) ? readFileSync(wal) : Buffer.alloc(0)]);
}

describe("deleting a conversation", () => {
  it("leaves neither its text nor its name in the database file or its WAL", async () => {
    const ts = await startServer();
    try {
      const name = `name-${randomBytes(8).toString("hex")}`;
      // The search index stores words, not the text: the random part is one word of its own.
      const token = randomBytes(8).toString("hex");
      const words = `words-${token}`;
      const keptWords = `kept-${randomBytes(8).toString("hex")}`;
      // resume: the resume log holds the events' text too.
      const c = await RawClient.connect(ts.wsUrl, { features: [FEATURE_RESUME, FEATURE_INBOX] });
      const search = async () =>
        (await c.ok({ type: "conversation.search", query: token }, "conversation.results")).results;
      const drop = await createConversation(c, name);
      await c.run(await send(c, drop, words));
      const keep = await createConversation(c, "Kept");
      await c.run(await send(c, keep, keptWords));
      // Before the delete the text is there to be found: the check below can fail.
      expect(onDisk(ts.dataDir).includes(words)).toBe(true);
      expect(onDisk(ts.dataDir).includes(name)).toBe(true);
      expect((await search()).map((r) => r.conversation_id)).toContain(drop);

      await c.ok({ type: "conversation.delete", conversation_id: drop }, "conversation.deleted");
      // Right after the reply, with the server still running: nothing of it in either file.
      let bytes = onDisk(ts.dataDir);
      expect(bytes.includes(words)).toBe(false);
      expect(bytes.includes(name)).toBe(false);

      // A checkpoint of whatever the WAL still holds, by another connection, finds nothing either.
      const db = new Database(join(ts.dataDir, DB_FILE));
      try {
        db.pragma("wal_checkpoint(TRUNCATE)");
        const tombstone = db.prepare("SELECT name, deleted_at FROM conversations WHERE id = ?").get(drop);
        expect(tombstone).toMatchObject({ name: "", deleted_at: expect.any(Number) });
      } finally {
        db.close();
      }
      bytes = onDisk(ts.dataDir);
      expect(bytes.includes(words)).toBe(false);
      expect(bytes.includes(name)).toBe(false);
      // Nor in the search index: not found, not a term of the index, not in its pages.
      expect(await search()).toEqual([]);
      const index = new Database(join(ts.dataDir, DB_FILE));
      try {
        index.exec("CREATE VIRTUAL TABLE temp.terms USING fts5vocab(main, messages_fts, row)");
        expect(index.prepare("SELECT term FROM temp.terms WHERE term = ?").get(token)).toBeUndefined();
        expect(index.prepare("SELECT 1 FROM temp.terms WHERE term = 'kept'").get()).toBeDefined();
      } finally {
        index.close();
      }
      expect(bytes.includes(token.slice(2))).toBe(false);
      // The other conversation is untouched.
      expect(bytes.includes(keptWords)).toBe(true);
      const history = await c.ok(
        { type: "conversation.open", conversation_id: keep },
        "conversation.history",
      );
      expect(history.messages[0]).toMatchObject({ role: "user", text: keptWords });
      c.close();
    } finally {
      await ts.cleanup();
    }
  });
});
