import { type ErrorCode, LIMITS, type ServerMessage } from "@pheby/protocol";
import type Database from "better-sqlite3";
import type { Clock } from "../util/time.js";

/** How long the outcome of a request sent with a `client_message_id` is remembered. */
export const SENT_REQUEST_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * Migration step recording who sent each remembered request, so each credential keeps at most
 * `LIMITS.clientMessageIdsPerPrincipal` rows: `"owner"` (the master secret) or a paired device's
 * id. Rows from before it count as the owner's.
 */
export const SENT_REQUESTS_PRINCIPAL_MIGRATION = `
  ALTER TABLE sent_requests ADD COLUMN principal TEXT NOT NULL DEFAULT 'owner';
  CREATE INDEX sent_requests_principal ON sent_requests (principal, at);
`;

/** The `principal` of a request the owner (the master secret) sent. */
export const OWNER_SENDER = "owner";

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
  readonly #put: Database.Statement<[string, string, string, string, number, string]>;
  readonly #senderOf: Database.Statement<[string, string, string], { principal: string }>;
  readonly #count: Database.Statement<[string]>;
  readonly #evictOldest: Database.Statement<[string]>;
  readonly #sweep: Database.Statement<[number]>;
  /**
   * Rows per sender, counted once per sender and then kept up to date, so that staying at the bound
   * costs two indexed statements per request rather than a scan of the sender's rows.
   */
  readonly #rows = new Map<string, number>();

  constructor(
    private readonly db: Database.Database,
    private readonly clock: Clock,
  ) {
    this.#get = db.prepare(
      "SELECT outcome FROM sent_requests WHERE kind = ? AND scope = ? AND client_message_id = ? AND at > ?",
    );
    // A stale row (older than the TTL, not yet swept) is replaced: the new request is a fresh one.
    this.#put = db.prepare(
      `INSERT INTO sent_requests (kind, scope, client_message_id, outcome, at, principal) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (kind, scope, client_message_id)
       DO UPDATE SET outcome = excluded.outcome, at = excluded.at, principal = excluded.principal`,
    );
    this.#senderOf = db.prepare(
      "SELECT principal FROM sent_requests WHERE kind = ? AND scope = ? AND client_message_id = ?",
    );
    this.#count = db.prepare("SELECT count(*) FROM sent_requests WHERE principal = ?").pluck();
    // One sender's oldest row (by time, then by insertion).
    this.#evictOldest = db.prepare(
      `DELETE FROM sent_requests WHERE rowid =
         (SELECT rowid FROM sent_requests WHERE principal = ? ORDER BY at, rowid LIMIT 1)`,
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

  /**
   * Remember what this request of `principal` (`"owner"` or a device's id) led to. Only the sender's
   * newest {@link LIMITS}.clientMessageIdsPerPrincipal are kept: one client sending fresh ids as fast
   * as it can fills no disk, and evicts nobody else's.
   */
  remember(key: SentKey, outcome: SentOutcome, principal: string): void {
    const stored = "reply" in outcome ? { reply: withoutRequestId(outcome.reply) } : { error: outcome.error };
    this.db.transaction(() => {
      const held = this.#held(principal);
      const previous = this.#senderOf.get(key.kind, key.scope, key.clientMessageId)?.principal;
      this.#put.run(
        key.kind,
        key.scope,
        key.clientMessageId,
        JSON.stringify(stored),
        this.clock.now(),
        principal,
      );
      if (previous === principal) return; // its own row, replaced: no new row
      const before = previous === undefined ? undefined : this.#rows.get(previous);
      if (before !== undefined) this.#rows.set(previous!, before - 1);
      if (held < LIMITS.clientMessageIdsPerPrincipal) {
        this.#rows.set(principal, held + 1);
      } else {
        this.#evictOldest.run(principal);
        this.#rows.set(principal, held);
      }
    })();
  }

  /** How many rows `principal` has. */
  #held(principal: string): number {
    let n = this.#rows.get(principal);
    if (n === undefined) {
      n = this.#count.get(principal) as number;
      this.#rows.set(principal, n);
    }
    return n;
  }

  /** Forget outcomes older than 24 hours; returns how many. */
  sweep(): number {
    const removed = this.#sweep.run(this.clock.now() - SENT_REQUEST_TTL_MS).changes;
    if (removed > 0) this.#rows.clear(); // counted again when next needed
    return removed;
  }
}

function withoutRequestId(reply: ServerMessage): ServerMessage {
  const { request_id: _ignored, ...shared } = reply as ServerMessage & { request_id?: unknown };
  return shared as ServerMessage;
}
