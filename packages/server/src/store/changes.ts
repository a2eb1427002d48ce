import type Database from "better-sqlite3";

/**
 * Migration step of the `changes` extension (v15), appended to `MIGRATIONS` in `migrations.ts`: each
 * conversation's base commit (HEAD when it was created, or at its first `changes.list` for an older
 * one) and the fingerprint of its changes at the end of its latest run, so `changes.changed` is sent
 * only when they moved, across restarts too.
 */
export const CHANGES_MIGRATION = `
  CREATE TABLE conversation_changes (
    conversation_id TEXT PRIMARY KEY REFERENCES conversations (id),
    base_commit     TEXT NOT NULL,
    fingerprint     TEXT
  );
`;

/** Each conversation's base commit and latest changes fingerprint (see {@link CHANGES_MIGRATION}). */
export class ChangesStore {
  readonly #get: Database.Statement<[string], { base_commit: string; fingerprint: string | null }>;
  readonly #setBase: Database.Statement<[string, string]>;
  readonly #setFingerprint: Database.Statement<[string, string]>;
  readonly #forget: Database.Statement<[string]>;

  constructor(db: Database.Database) {
    this.#get = db.prepare(
      "SELECT base_commit, fingerprint FROM conversation_changes WHERE conversation_id = ?",
    );
    // The first base recorded stays: a conversation's base never moves.
    this.#setBase = db.prepare(
      "INSERT OR IGNORE INTO conversation_changes (conversation_id, base_commit) VALUES (?, ?)",
    );
    this.#setFingerprint = db.prepare(
      "UPDATE conversation_changes SET fingerprint = ? WHERE conversation_id = ?",
    );
    this.#forget = db.prepare("DELETE FROM conversation_changes WHERE conversation_id = ?");
  }

  /** The conversation's base commit, or undefined when none was recorded yet. */
  base(conversationId: string): string | undefined {
    return this.#get.get(conversationId)?.base_commit;
  }

  /** Record the base unless one is recorded; returns the conversation's base. */
  setBase(conversationId: string, commit: string): string {
    this.#setBase.run(conversationId, commit);
    return this.base(conversationId) ?? commit;
  }

  /** The fingerprint of the changes at the end of the latest run that had one, or null. */
  fingerprint(conversationId: string): string | null {
    return this.#get.get(conversationId)?.fingerprint ?? null;
  }

  setFingerprint(conversationId: string, fingerprint: string): void {
    this.#setFingerprint.run(fingerprint, conversationId);
  }

  /** The conversation was deleted. */
  forget(conversationId: string): void {
    this.#forget.run(conversationId);
  }
}
