import type { ServerMessage } from "@pheby/protocol";
import type Database from "better-sqlite3";

/** Bounds of one conversation's resume log (the oldest events go first). */
export interface ResumeLogLimits {
  /** At most this many stored events per conversation. */
  maxEvents: number;
  /** At most this many UTF-8 bytes of stored event JSON per conversation. */
  maxBytes: number;
}

/** Default bounds: 2,000 events and 8 MiB per conversation. */
export const DEFAULT_RESUME_LOG_LIMITS: ResumeLogLimits = { maxEvents: 2_000, maxBytes: 8 * 1024 * 1024 };

/** @deprecated Renamed {@link ResumeLogLimits} ("replay" is an agent's history replay). */
export type ReplayLimits = ResumeLogLimits;
/** @deprecated Renamed {@link DEFAULT_RESUME_LOG_LIMITS}. */
export const DEFAULT_REPLAY_LIMITS: ResumeLogLimits = DEFAULT_RESUME_LOG_LIMITS;

/**
 * Of a conversation's consecutive deltas, every this-many-th is written with
 * an fsync; the others are committed without one (see {@link ResumeLog}).
 */
export const DELTAS_PER_FSYNC = 16;

/** Fields of an event that only peers with an extension get, by extension name. */
export type ExtensionFields = Readonly<Record<string, Readonly<Record<string, unknown>>>>;

/** One stored event and the `seq` it was sent with. */
export interface LoggedEvent {
  seq: number;
  /** The extension a peer needs to be sent this event (e.g. `queue`); null for every resume peer. */
  feature: string | null;
  /** The typed event as every connection's copy shares it: no `request_id`, no `seq`. */
  event: ServerMessage;
  /** Other extensions' fields the event was sent with, if any. */
  fields: ExtensionFields | null;
}

/** What else {@link ResumeLog.append} keeps of an event. */
export interface AppendOptions {
  /** The extension a peer needs to be sent it (an extension's own event, e.g. `queue.changed`). */
  feature?: string | undefined;
  /** Fields only peers with an extension get (not `resume`'s own: they are derived). */
  fields?: ExtensionFields | undefined;
}

/** What the log can tell a client that last saw `seq` N of a conversation. */
export type ResumeWindow =
  | { complete: true; lastSeq: number; events: LoggedEvent[] }
  | {
      complete: false;
      lastSeq: number;
      /** `evicted`: events after N are gone; `unknown`: the server never issued N. */
      reason: "evicted" | "unknown";
    };

interface Counter {
  last_seq: number;
  evicted_through: number;
  events: number;
  bytes: number;
}

/** A row about to be stored. */
interface NewRow {
  event: string;
  fields: string | null;
  draftOf: string | null;
  feature: string | null;
}

const NO_COUNTER: Counter = { last_seq: 0, evicted_through: 0, events: 0, bytes: 0 };

/**
 * The per-conversation resume log of the `resume` extension: every event of a
 * conversation gets the next `seq` (an integer that only grows, persisted, so
 * it keeps growing across restarts and is never issued twice for one ID, even
 * after the conversation is deleted), and is stored so a client that dropped
 * can be sent exactly what it missed.
 *
 * `message.delta`s are cumulative, so a delta that directly follows a delta of
 * the same message replaces it: one row is updated in place (new seq, new
 * text) rather than a row inserted per delta, and a replay sends the latest
 * draft. A delta after any other event (a tool call, a question) starts a new
 * row, so replayed text still lands on the right side of that event.
 *
 * Bounded per conversation by {@link ResumeLogLimits}, oldest first; eviction
 * raises a watermark (`evicted_through`) so {@link after} knows when it no
 * longer holds everything a client missed, rather than replaying with a hole.
 * Synchronous like the rest of the store; each call is one transaction.
 *
 * **Write cost.** Deltas come up to ten a second per run, and the store's
 * `synchronous=FULL` costs an fsync per commit: 0.2 ms on an idle disk, 3-5 ms
 * on a busy one, during which the event loop waits. So a delta is committed
 * without the fsync (`synchronous=NORMAL`: it survives a crash of the process,
 * as WAL keeps it in the OS, but not a power loss), except every
 * {@link DELTAS_PER_FSYNC}th one of a conversation; every other event keeps
 * the fsync. After a power loss a conversation can thus have lost at most
 * `DELTAS_PER_FSYNC - 1` deltas, i.e. seqs that clients may have seen: the
 * start after a crash calls {@link skipLost} for each conversation whose run
 * was interrupted, so those seqs are never issued again.
 */
export class ResumeLog {
  readonly #db: Database.Database;
  readonly #counter: Database.Statement<[string], Counter>;
  readonly #saveCounter: Database.Statement<[Counter & { conversation_id: string }]>;
  readonly #lastRow: Database.Statement<
    [string],
    { id: number; draft_of: string | null; bytes: number; feature: string | null; fields: string | null }
  >;
  readonly #insert: Database.Statement<
    [string, number, string | null, string | null, string, string | null, number]
  >;
  readonly #rewrite: Database.Statement<[number, string, string | null, string | null, number, number]>;
  readonly #oldest: Database.Statement<[string], { seq: number; bytes: number }>;
  readonly #evict: Database.Statement<[string, number]>;
  readonly #from: Database.Statement<
    [string, number],
    { seq: number; feature: string | null; event: string; fields: string | null }
  >;
  readonly #append: (conversationId: string, row: NewRow) => number;

  readonly #durableSync: number;
  readonly #deltasPerFsync: number;
  /** Deltas of each conversation committed without an fsync since its last durable write. */
  readonly #unsynced = new Map<string, number>();

  /**
   * @param limits bounds per conversation
   * @param deltasPerFsync see {@link DELTAS_PER_FSYNC}; 1 fsyncs every delta
   */
  constructor(
    db: Database.Database,
    private readonly limits: ResumeLogLimits = DEFAULT_RESUME_LOG_LIMITS,
    deltasPerFsync = DELTAS_PER_FSYNC,
  ) {
    this.#db = db;
    this.#durableSync = db.pragma("synchronous", { simple: true }) as number;
    this.#deltasPerFsync = deltasPerFsync;
    this.#counter = db.prepare(
      "SELECT last_seq, evicted_through, events, bytes FROM replay_counters WHERE conversation_id = ?",
    );
    this.#saveCounter = db.prepare(
      `INSERT INTO replay_counters (conversation_id, last_seq, evicted_through, events, bytes)
       VALUES (@conversation_id, @last_seq, @evicted_through, @events, @bytes)
       ON CONFLICT (conversation_id) DO UPDATE SET last_seq = excluded.last_seq,
         evicted_through = excluded.evicted_through, events = excluded.events, bytes = excluded.bytes`,
    );
    this.#lastRow = db.prepare(
      "SELECT id, draft_of, bytes, feature, fields FROM replay_events WHERE conversation_id = ? ORDER BY seq DESC LIMIT 1",
    );
    this.#insert = db.prepare(
      "INSERT INTO replay_events (conversation_id, seq, draft_of, feature, event, fields, bytes) VALUES (?, ?, ?, ?, ?, ?, ?)",
    );
    this.#rewrite = db.prepare(
      "UPDATE replay_events SET seq = ?, event = ?, fields = ?, feature = ?, bytes = ? WHERE id = ?",
    );
    this.#oldest = db.prepare("SELECT seq, bytes FROM replay_events WHERE conversation_id = ? ORDER BY seq");
    this.#evict = db.prepare("DELETE FROM replay_events WHERE conversation_id = ? AND seq <= ?");
    this.#from = db.prepare(
      "SELECT seq, feature, event, fields FROM replay_events WHERE conversation_id = ? AND seq > ? ORDER BY seq",
    );
    this.#append = db.transaction(this.#appendNow.bind(this));
  }

  /**
   * Give `event` the conversation's next `seq` and store it; returns the seq.
   * `request_id` and `seq` are left out (they belong to one connection's copy).
   */
  append(conversationId: string, event: ServerMessage, options: AppendOptions = {}): number {
    const {
      request_id: _request,
      seq: _seq,
      ...shared
    } = event as ServerMessage & {
      request_id?: unknown;
      seq?: unknown;
    };
    const draftOf = collapseKey(event);
    const fields = options.fields && Object.keys(options.fields).length > 0 ? options.fields : null;
    const row: NewRow = {
      event: JSON.stringify(shared),
      fields: fields === null ? null : JSON.stringify(fields),
      draftOf,
      feature: options.feature ?? null,
    };
    if (!this.#deferFsync(conversationId, event.type === "message.delta"))
      return this.#append(conversationId, row);
    this.#db.pragma("synchronous = NORMAL");
    try {
      return this.#append(conversationId, row);
    } finally {
      this.#db.pragma(`synchronous = ${this.#durableSync}`);
    }
  }

  /**
   * Start of a server whose previous process may have lost a conversation's
   * last deltas (see the class comment): move its seq past every one it
   * might have issued. Call it before logging what the restart did.
   */
  skipLost(conversationId: string): void {
    const counter = this.#counter.get(conversationId);
    if (!counter) return;
    this.#saveCounter.run({
      conversation_id: conversationId,
      ...counter,
      last_seq: counter.last_seq + this.#deltasPerFsync,
    });
  }

  /** The highest seq issued for a conversation (0 before its first event): the baseline a snapshot carries. */
  lastSeq(conversationId: string): number {
    return this.#counter.get(conversationId)?.last_seq ?? 0;
  }

  /**
   * The events after `seq`, in order, when the log still holds every one of
   * them; otherwise `complete: false` (they were evicted, or `seq` is one the
   * server never issued, e.g. from before a database was replaced), and the
   * client must take a snapshot instead.
   */
  after(conversationId: string, seq: number): ResumeWindow {
    const counter = this.#counter.get(conversationId) ?? NO_COUNTER;
    const lastSeq = counter.last_seq;
    if (!Number.isSafeInteger(seq) || seq < 0 || seq > lastSeq) {
      return { complete: false, lastSeq, reason: "unknown" };
    }
    if (seq < counter.evicted_through) return { complete: false, lastSeq, reason: "evicted" };
    return { complete: true, lastSeq, events: this.#rows(conversationId, seq) };
  }

  /** Every event still held for a conversation, oldest first (what a restart inspects). */
  held(conversationId: string): LoggedEvent[] {
    return this.#rows(conversationId, 0);
  }

  /**
   * The conversation was deleted: drop its events but keep its counter, so
   * its seq never restarts and no earlier seq can be resumed.
   */
  forget(conversationId: string): void {
    this.#unsynced.delete(conversationId);
    this.#db.transaction(() => {
      const counter = this.#counter.get(conversationId);
      if (!counter) return;
      this.#evict.run(conversationId, counter.last_seq);
      this.#saveCounter.run({
        conversation_id: conversationId,
        last_seq: counter.last_seq,
        evicted_through: counter.last_seq,
        events: 0,
        bytes: 0,
      });
    })();
  }

  /** Whether this event may be committed without an fsync (counting the conversation's deltas). */
  #deferFsync(conversationId: string, isDelta: boolean): boolean {
    // Inside a caller's transaction the commit is the caller's; a store without fsyncs has none to save.
    if (!isDelta || this.#db.inTransaction || this.#durableSync < 2) {
      this.#unsynced.delete(conversationId);
      return false;
    }
    const unsynced = (this.#unsynced.get(conversationId) ?? 0) + 1;
    if (unsynced >= this.#deltasPerFsync) {
      this.#unsynced.delete(conversationId);
      return false;
    }
    this.#unsynced.set(conversationId, unsynced);
    return true;
  }

  #rows(conversationId: string, seq: number): LoggedEvent[] {
    return this.#from.all(conversationId, seq).map((row) => ({
      seq: row.seq,
      feature: row.feature,
      event: JSON.parse(row.event) as ServerMessage,
      fields: row.fields === null ? null : (JSON.parse(row.fields) as ExtensionFields),
    }));
  }

  #appendNow(conversationId: string, row: NewRow): number {
    const counter = { ...(this.#counter.get(conversationId) ?? NO_COUNTER) };
    const seq = counter.last_seq + 1;
    const bytes = Buffer.byteLength(row.event) + (row.fields === null ? 0 : Buffer.byteLength(row.fields));
    const last = row.draftOf === null ? undefined : this.#lastRow.get(conversationId);
    // The previous event of the conversation was this message's draft (or this tool call's event):
    // the new one supersedes it. (The newest row is always the newest event: eviction takes the oldest first.)
    if (last !== undefined && last.draft_of === row.draftOf) {
      const merged = mergeRows(last, row);
      const size =
        Buffer.byteLength(row.event) + (merged.fields === null ? 0 : Buffer.byteLength(merged.fields));
      this.#rewrite.run(seq, row.event, merged.fields, merged.feature, size, last.id);
      counter.bytes += size - last.bytes;
    } else {
      this.#insert.run(conversationId, seq, row.draftOf, row.feature, row.event, row.fields, bytes);
      counter.events += 1;
      counter.bytes += bytes;
    }
    counter.last_seq = seq;
    if (counter.events > this.limits.maxEvents || counter.bytes > this.limits.maxBytes) {
      this.#evictOldest(conversationId, counter);
    }
    this.#saveCounter.run({ conversation_id: conversationId, ...counter });
    return seq;
  }

  /** Drop the oldest events until the conversation is within its bounds (possibly all of them). */
  #evictOldest(conversationId: string, counter: Counter): void {
    let cut = counter.evicted_through;
    for (const row of this.#oldest.iterate(conversationId)) {
      if (counter.events <= this.limits.maxEvents && counter.bytes <= this.limits.maxBytes) break;
      cut = row.seq;
      counter.events -= 1;
      counter.bytes -= row.bytes;
    }
    this.#evict.run(conversationId, cut);
    counter.evicted_through = cut;
  }
}

/**
 * What a stored event collapses with when it directly follows it: a message's cumulative deltas
 * (the latest holds the whole draft), and one tool call's `tool.event`s (the latest holds its state).
 * Null for every other event.
 */
function collapseKey(event: ServerMessage): string | null {
  if (event.type === "message.delta") return event.message_id;
  if (event.type === "tool.event") return `tool:${event.tool_call_id}`;
  return null;
}

/**
 * The feature and fields of a row that supersedes `last`. A tool call's event for one extension
 * only (`activity`'s detail) that collapses with one every peer gets stays every peer's; each
 * extension's fields are the latest, on top of the earlier ones (an event repeats a call's content
 * only when it changed, so the earlier content stands until then).
 */
function mergeRows(
  last: { feature: string | null; fields: string | null },
  row: NewRow,
): { feature: string | null; fields: string | null } {
  if (row.draftOf !== null && !row.draftOf.startsWith("tool:"))
    return { feature: row.feature, fields: row.fields };
  const feature = last.feature === null || row.feature === null ? null : row.feature;
  if (last.fields === null) return { feature, fields: row.fields };
  const before = JSON.parse(last.fields) as Record<string, Record<string, unknown>>;
  const after =
    row.fields === null ? {} : (JSON.parse(row.fields) as Record<string, Record<string, unknown>>);
  const fields: Record<string, Record<string, unknown>> = {};
  for (const name of new Set([...Object.keys(before), ...Object.keys(after)])) {
    fields[name] = { ...before[name], ...after[name] };
  }
  return { feature, fields: JSON.stringify(fields) };
}
