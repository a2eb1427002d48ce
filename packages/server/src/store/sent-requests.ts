import type { ErrorCode, ServerMessage } from "@pheby/protocol";
import type Database from "better-sqlite3";
import type { Clock } from "../util/time.js";

/** How long the outcome of a request sent with a `client_message_id` is remembered. */
export const SENT_REQUEST_TTL_MS = 24 * 60 * 60 * 1000;

/** The requests a `client_message_id` makes idempotent. */
export type SentKind = "chat.send" | "conversation.create";

/** Which request: `scope` is the conversation of a `chat.send`, `""` for `conversation.create` (server-wide). */
export interface SentKey {
  kind: SentKind;
  scope: string;
  clientMessageId: string;
}

/** What a request led to: its reply (without `request_id`), or the permanent error it was refused with. */
export type SentOutcome = { reply: ServerMessage } | { error: { code: ErrorCode; message: string } };

/**
 * Remembered outcomes of requests sent with a `client_message_id`, for
 * {@link SENT_REQUEST_TTL_MS}, in SQLite so a retry after a restart still gets
 * the original outcome. Which outcomes are worth remembering is the caller's
 * rule (see `resume/idempotency.ts`).
 */
export class SentRequests {
  readonly #get: Database.Statement<[string, string, string, number], { outcome: string }>;
  readonly #put: Database.Statement<[string, string, string, string, number]>;
  readonly #sweep: Database.Statement<[number]>;

  constructor(
    db: Database.Database,
    private readonly clock: Clock,
  ) {
    this.#get = db.prepare(
      "SELECT outcome FROM sent_requests WHERE kind = ? AND scope = ? AND client_message_id = ? AND at > ?",
    );
    // A stale row (older than the TTL, not yet swept) is replaced: the new request is a fresh one.
    this.#put = db.prepare(
      `INSERT INTO sent_requests (kind, scope, client_message_id, outcome, at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (kind, scope, client_message_id) DO UPDATE SET outcome = excluded.outcome, at = excluded.at`,
    );
    this.#sweep = db.prepare("DELETE FROM sent_requests WHERE at <= ?");
  }

  /** The outcome remembered for this request within the last 24 hours. */
  recall(key: SentKey): SentOutcome | undefined {
    const row = this.#get.get(
      key.kind,
      key.scope,
      key.clientMessageId,
      this.clock.now() - SENT_REQUEST_TTL_MS,
    );
    return row === undefined ? undefined : (JSON.parse(row.outcome) as SentOutcome);
  }

  /** Remember what this request led to. */
  remember(key: SentKey, outcome: SentOutcome): void {
    const stored = "reply" in outcome ? { reply: withoutRequestId(outcome.reply) } : { error: outcome.error };
    this.#put.run(key.kind, key.scope, key.clientMessageId, JSON.stringify(stored), this.clock.now());
  }

  /** Forget outcomes older than 24 hours; returns how many. */
  sweep(): number {
    return this.#sweep.run(this.clock.now() - SENT_REQUEST_TTL_MS).changes;
  }
}

function withoutRequestId(reply: ServerMessage): ServerMessage {
  const { request_id: _ignored, ...shared } = reply as ServerMessage & { request_id?: unknown };
  return shared as ServerMessage;
}
