import { LIMITS } from "@pheby/protocol";
import type Database from "better-sqlite3";

/** A follow-up waiting for the conversation's active run to end. */
export interface QueuedRun {
  runId: string;
  conversationId: string;
  text: string;
  clientMessageId: string | null;
  /** Uploads to claim when the run starts (the user message is recorded then, not when queued). */
  attachmentIds: string[];
  queuedAt: number;
  /** The paired device that queued it; null: the owner, or the server (a schedule's prompt). */
  deviceId: string | null;
  /** The schedule whose prompt it is; null: a client's follow-up. */
  scheduleId: string | null;
}

interface Row {
  run_id: string;
  conversation_id: string;
  text: string;
  client_message_id: string | null;
  attachment_ids: string;
  queued_at: number;
  device_id: string | null;
  schedule_id: string | null;
}

/**
 * The persisted queues of the `queue` extension: per conversation, in the
 * order they were queued, at most {@link LIMITS.queuedRunsPerConversation}. Kept in SQLite so a
 * queue survives a restart (its runs start once the server is back).
 */
export class QueueStore {
  readonly #db: Database.Database;
  readonly #count: Database.Statement<[string], { n: number }>;
  readonly #insert: Database.Statement<[Row]>;
  readonly #list: Database.Statement<[string], Row>;
  readonly #first: Database.Statement<[string], Row>;
  readonly #remove: Database.Statement<[string, string]>;
  readonly #clear: Database.Statement<[string]>;
  readonly #enqueue: (run: QueuedRun, max: number) => number | null;

  constructor(db: Database.Database) {
    this.#db = db;
    this.#count = db.prepare("SELECT COUNT(*) AS n FROM queued_runs WHERE conversation_id = ?");
    this.#insert = db.prepare(
      `INSERT INTO queued_runs (run_id, conversation_id, text, client_message_id, attachment_ids, queued_at, device_id, schedule_id)
       VALUES (@run_id, @conversation_id, @text, @client_message_id, @attachment_ids, @queued_at, @device_id, @schedule_id)`,
    );
    this.#list = db.prepare("SELECT * FROM queued_runs WHERE conversation_id = ? ORDER BY id");
    this.#first = db.prepare("SELECT * FROM queued_runs WHERE conversation_id = ? ORDER BY id LIMIT 1");
    this.#remove = db.prepare("DELETE FROM queued_runs WHERE conversation_id = ? AND run_id = ?");
    this.#clear = db.prepare("DELETE FROM queued_runs WHERE conversation_id = ?");
    this.#enqueue = db.transaction((run: QueuedRun, max: number) => {
      const { n } = this.#count.get(run.conversationId)!;
      if (n >= max) return null;
      this.#insert.run(toRow(run));
      return n + 1;
    });
  }

  /** Append a run to its conversation's queue; its 1-based position, or null when the queue is full. */
  enqueue(run: QueuedRun, max = LIMITS.queuedRunsPerConversation): number | null {
    return this.#enqueue(run, max);
  }

  /** A conversation's queue, first to start first. */
  list(conversationId: string): QueuedRun[] {
    return this.#list.all(conversationId).map(fromRow);
  }

  /** Take the next run to start out of the queue. */
  shift(conversationId: string): QueuedRun | undefined {
    return this.#db.transaction(() => {
      const row = this.#first.get(conversationId);
      if (row === undefined) return undefined;
      this.#remove.run(conversationId, row.run_id);
      return fromRow(row);
    })();
  }

  /** Remove a queued run (cancelled); false when it is not queued in that conversation. */
  remove(conversationId: string, runId: string): boolean {
    return this.#remove.run(conversationId, runId).changes > 0;
  }

  /** Drop a conversation's whole queue (the conversation was deleted); returns how many. */
  clear(conversationId: string): number {
    return this.#clear.run(conversationId).changes;
  }

  /** Every queued run a device queued (it was revoked), any conversation, in queue order. */
  ofDevice(deviceId: string): QueuedRun[] {
    return (
      this.#db.prepare("SELECT * FROM queued_runs WHERE device_id = ? ORDER BY id").all(deviceId) as Row[]
    ).map(fromRow);
  }

  /** Conversations that have queued runs, for the start after a restart. */
  conversations(): string[] {
    return (
      this.#db
        .prepare("SELECT conversation_id FROM queued_runs GROUP BY conversation_id ORDER BY MIN(id)")
        .all() as {
        conversation_id: string;
      }[]
    ).map((r) => r.conversation_id);
  }
}

function toRow(run: QueuedRun): Row {
  return {
    run_id: run.runId,
    conversation_id: run.conversationId,
    text: run.text,
    client_message_id: run.clientMessageId,
    attachment_ids: JSON.stringify(run.attachmentIds),
    queued_at: run.queuedAt,
    device_id: run.deviceId,
    schedule_id: run.scheduleId,
  };
}

function fromRow(row: Row): QueuedRun {
  return {
    runId: row.run_id,
    conversationId: row.conversation_id,
    text: row.text,
    clientMessageId: row.client_message_id,
    attachmentIds: JSON.parse(row.attachment_ids) as string[],
    queuedAt: row.queued_at,
    deviceId: row.device_id,
    scheduleId: row.schedule_id,
  };
}
