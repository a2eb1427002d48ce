import type { AttachmentKind } from "@pheby/protocol";
import type Database from "better-sqlite3";

/** A row of the `attachments` table (migration v3; timestamps in ms). */
export interface AttachmentRow {
  id: string;
  conversation_id: string;
  direction: "inbound" | "outbound";
  filename: string;
  mime_type: string;
  size: number;
  kind: AttachmentKind;
  inline_image: number;
  message_id: string | null;
  created_at: number;
  expires_at: number | null;
}

/**
 * `message_id` of uploads claimed by a queued send, until its run starts (`queued-<run_id>`): they
 * are claimed, but not yet part of the conversation's history.
 */
export const QUEUED_HOLDER_PREFIX = "queued-";

/** The attachment index: the queries of the attachment store (its blobs are files, see attachments/store.ts). */
export class AttachmentRows {
  constructor(private readonly db: Database.Database) {}

  insert(row: AttachmentRow): void {
    this.db
      .prepare(
        `INSERT INTO attachments (id, conversation_id, direction, filename, mime_type, size, kind, inline_image, message_id, created_at, expires_at)
         VALUES (@id, @conversation_id, @direction, @filename, @mime_type, @size, @kind, @inline_image, @message_id, @created_at, @expires_at)`,
      )
      .run(row);
  }

  get(id: string): AttachmentRow | undefined {
    return this.db.prepare("SELECT * FROM attachments WHERE id = ?").get(id) as AttachmentRow | undefined;
  }

  has(id: string): boolean {
    return this.db.prepare("SELECT 1 FROM attachments WHERE id = ?").get(id) !== undefined;
  }

  /** Unexpired attachments of a conversation that belong to a message (not a queued send), oldest first. */
  ofMessages(conversationId: string, now: number): AttachmentRow[] {
    return this.db
      .prepare(
        `SELECT * FROM attachments WHERE conversation_id = ? AND message_id IS NOT NULL
           AND message_id NOT LIKE '${QUEUED_HOLDER_PREFIX}%'
           AND (expires_at IS NULL OR expires_at > ?) ORDER BY created_at, rowid`,
      )
      .all(conversationId, now) as AttachmentRow[];
  }

  /** Unexpired attachments of one message, oldest first. */
  ofMessage(messageId: string, now: number): AttachmentRow[] {
    return this.db
      .prepare(
        `SELECT * FROM attachments WHERE message_id = ? AND (expires_at IS NULL OR expires_at > ?)
           ORDER BY created_at, rowid`,
      )
      .all(messageId, now) as AttachmentRow[];
  }

  /** Bind one attachment to a message. */
  setMessage(id: string, messageId: string): void {
    this.db.prepare("UPDATE attachments SET message_id = ? WHERE id = ?").run(messageId, id);
  }

  /** Move every attachment of message `from` to message `to` (null: unclaimed again). */
  moveMessage(from: string, to: string | null): void {
    this.db.prepare("UPDATE attachments SET message_id = ? WHERE message_id = ?").run(to, from);
  }

  /** IDs of attachments expired at `now`. */
  expired(now: number): string[] {
    const rows = this.db
      .prepare("SELECT id FROM attachments WHERE expires_at IS NOT NULL AND expires_at <= ?")
      .all(now) as { id: string }[];
    return rows.map((r) => r.id);
  }

  delete(id: string): void {
    this.db.prepare("DELETE FROM attachments WHERE id = ?").run(id);
  }
}
