import type { MessageRole } from "@pheby/protocol";
import Database from "better-sqlite3";

/**
 * The schema step of the `inbox` extension, a step of `MIGRATIONS` in store/migrations.ts:
 *
 * - `archived` on conversations (one state for every reader);
 * - readers (the master secret, `owner`, and each paired device) with the message ID up to which a
 *   new reader counts everything read: the newest message when it was created. A device's reader is
 *   created with the device (a trigger, in the device's own transaction) and deleted with it (a
 *   cascading key), its read marks with it;
 * - read marks, per reader and conversation: the ID of the last message read;
 * - an FTS5 index over the transcript's text, external-content (the text itself stays in `messages`
 *   only), kept in step by triggers, so every statement that writes or deletes a message updates the
 *   index in its own transaction. `secure-delete` (persistent) removes a deleted message's terms
 *   from the index pages instead of leaving them behind a delete marker.
 */
export const INBOX_MIGRATION = `
  ALTER TABLE conversations ADD COLUMN archived INTEGER NOT NULL DEFAULT 0;

  CREATE TABLE inbox_readers (
    reader    TEXT PRIMARY KEY,                                   -- 'owner', or the device's ID
    device_id TEXT REFERENCES devices (id) ON DELETE CASCADE,     -- null for the owner
    baseline  INTEGER NOT NULL                                    -- messages up to this ID count as read
  );
  INSERT INTO inbox_readers (reader, device_id, baseline)
    SELECT 'owner', NULL, COALESCE(MAX(id), 0) FROM messages;
  INSERT INTO inbox_readers (reader, device_id, baseline)
    SELECT id, id, (SELECT COALESCE(MAX(id), 0) FROM messages) FROM devices;
  CREATE TRIGGER devices_inbox_reader AFTER INSERT ON devices BEGIN
    INSERT INTO inbox_readers (reader, device_id, baseline)
      VALUES (new.id, new.id, (SELECT COALESCE(MAX(id), 0) FROM messages));
  END;

  CREATE TABLE read_marks (
    reader          TEXT NOT NULL REFERENCES inbox_readers (reader) ON DELETE CASCADE,
    conversation_id TEXT NOT NULL,
    message_id      INTEGER NOT NULL,                             -- the last message read
    PRIMARY KEY (reader, conversation_id)
  );

  CREATE VIRTUAL TABLE messages_fts USING fts5 (text, content = 'messages', content_rowid = 'id');
  INSERT INTO messages_fts (messages_fts, rank) VALUES ('secure-delete', 1);
  INSERT INTO messages_fts (messages_fts) VALUES ('rebuild');
  CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts (rowid, text) VALUES (new.id, new.text);
  END;
  CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, text) VALUES ('delete', old.id, old.text);
  END;
  CREATE TRIGGER messages_fts_update AFTER UPDATE OF text ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, text) VALUES ('delete', old.id, old.text);
    INSERT INTO messages_fts (rowid, text) VALUES (new.id, new.text);
  END;
`;

/** The last message of a conversation, as a list preview shows it. */
export interface LastMessage {
  id: number;
  role: MessageRole;
  text: string;
  ts: number | null;
}

/** One search hit. */
export interface SearchHit {
  conversation_id: string;
  id: number;
  /** FTS5's snippet of the match (plain text: no markers). */
  snippet: string;
  ts: number | null;
}

// An unread message: an assistant answer Pheby recorded (it has a run: schedules' and unsolicited
// runs included), not one copied from the agent's own replayed history, which predates the reader.
const UNREAD = `role = 'assistant' AND run_id IS NOT NULL AND id > COALESCE(
  (SELECT message_id FROM read_marks WHERE reader = @reader AND conversation_id = @conversation),
  (SELECT baseline FROM inbox_readers WHERE reader = @reader),
  0)`;

/** The query's words (letters, digits), each an FTS5 string, so none is read as syntax; "" when it has none. */
export function plainWords(query: string): string {
  return (query.match(/[\p{L}\p{N}\p{M}_]+/gu) ?? []).map((w) => `"${w}"`).join(" ");
}

/** Read marks, archive state and the search index (the `inbox` extension). */
export class InboxStore {
  readonly #unread: Database.Statement<{ reader: string; conversation: string }, { n: number }>;
  readonly #last: Database.Statement<[string], LastMessage>;

  constructor(private readonly db: Database.Database) {
    this.#unread = db.prepare(
      `SELECT COUNT(*) AS n FROM messages WHERE conversation_id = @conversation AND ${UNREAD}`,
    );
    this.#last = db.prepare(
      "SELECT id, role, text, ts FROM messages WHERE conversation_id = ? ORDER BY id DESC LIMIT 1",
    );
  }

  /** Every reader: the owner and each paired device. */
  readers(): string[] {
    return (
      this.db.prepare("SELECT reader FROM inbox_readers ORDER BY rowid").all() as { reader: string }[]
    ).map((r) => r.reader);
  }

  /** How many of the conversation's messages `reader` has not read. */
  unread(reader: string, conversationId: string): number {
    return this.#unread.get({ reader, conversation: conversationId })!.n;
  }

  /** `reader`'s unread messages over every live, unarchived conversation (a push badge). */
  unreadTotal(reader: string): number {
    const row = this.db
      .prepare(
        `SELECT COUNT(*) AS n FROM messages
         WHERE conversation_id IN (SELECT id FROM conversations WHERE deleted_at IS NULL AND archived = 0)
         AND ${UNREAD.replaceAll("@conversation", "messages.conversation_id")}`,
      )
      .get({ reader }) as { n: number };
    return row.n;
  }

  /**
   * Mark the conversation read for `reader` up to message `upTo` (default: its newest message). A
   * mark never goes back: an older message than the current mark changes nothing.
   */
  markRead(reader: string, conversationId: string, upTo?: number): void {
    const id =
      upTo ??
      (
        this.db
          .prepare("SELECT MAX(id) AS id FROM messages WHERE conversation_id = ?")
          .get(conversationId) as {
          id: number | null;
        }
      ).id;
    if (id === null) return;
    this.db
      .prepare(
        `INSERT INTO read_marks (reader, conversation_id, message_id)
         SELECT @reader, @conversation, @id WHERE EXISTS (SELECT 1 FROM inbox_readers WHERE reader = @reader)
         ON CONFLICT (reader, conversation_id) DO UPDATE SET message_id = MAX(message_id, excluded.message_id)`,
      )
      .run({ reader, conversation: conversationId, id });
  }

  /** The conversation's newest message, or undefined when it has none. */
  lastMessage(conversationId: string): LastMessage | undefined {
    return this.#last.get(conversationId);
  }

  /** Whether the conversation's most recent run failed. */
  lastRunFailed(conversationId: string): boolean {
    const row = this.db
      .prepare(
        "SELECT status FROM runs WHERE conversation_id = ? ORDER BY started_at DESC, rowid DESC LIMIT 1",
      )
      .get(conversationId) as { status: string } | undefined;
    return row?.status === "failed";
  }

  setArchived(conversationId: string, archived: boolean): void {
    this.db
      .prepare("UPDATE conversations SET archived = ? WHERE id = ?")
      .run(archived ? 1 : 0, conversationId);
  }

  /** A deleted conversation's read marks (part of its deletion's transaction). */
  forget(conversationId: string): void {
    this.db.prepare("DELETE FROM read_marks WHERE conversation_id = ?").run(conversationId);
  }

  /**
   * Messages of live conversations matching `query`, newest first, each with a plain-text snippet
   * around the match. The query is FTS5's syntax (`a AND b`, `"a phrase"`, `pre*`); one FTS5 cannot
   * parse (`"unbalanced`, `NEAR(`, an unknown column) is searched again as its plain words, so a
   * search is never an error.
   */
  search(query: string, limit: number): SearchHit[] {
    try {
      return this.#match(query, limit);
    } catch (err) {
      if (!(err instanceof Database.SqliteError)) throw err;
      const words = plainWords(query);
      return words === "" ? [] : this.#match(words, limit);
    }
  }

  // Two steps: the newest `limit` matches first, then snippets for those alone (a snippet re-reads
  // and tokenises its message: for a word in most messages, snippets of every match cost ~50× more).
  // A deleted conversation's messages are gone, so every match is a live conversation's.
  #match(match: string, limit: number): SearchHit[] {
    return this.db
      .prepare(
        `WITH hits AS (
           SELECT m.id, m.conversation_id, m.ts FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid
           WHERE messages_fts MATCH @match ORDER BY m.ts DESC NULLS LAST, m.id DESC LIMIT @limit)
         SELECT h.conversation_id, h.id, h.ts, snippet(messages_fts, 0, '', '', '…', 24) AS snippet
         FROM messages_fts JOIN hits h ON h.id = messages_fts.rowid
         WHERE messages_fts MATCH @match ORDER BY h.ts DESC NULLS LAST, h.id DESC`,
      )
      .all({ match, limit }) as SearchHit[];
  }

  /** The same search as a `LIKE` scan of the transcript (the benchmark's baseline; no snippet). */
  scan(words: string, limit: number): Omit<SearchHit, "snippet">[] {
    return this.db
      .prepare(
        `SELECT m.conversation_id, m.id, m.ts FROM messages m
         WHERE m.text LIKE ? ESCAPE '\\' ORDER BY m.ts DESC NULLS LAST, m.id DESC LIMIT ?`,
      )
      .all(`%${words.replace(/[\\%_]/g, "\\$&")}%`, limit) as Omit<SearchHit, "snippet">[];
  }
}
