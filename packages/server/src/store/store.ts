import { join } from "node:path";
import type { RunStatus, ToolStatus } from "@pheby/protocol";
import Database from "better-sqlite3";
import { ensurePrivateDir, ensurePrivateFile, restrictFile } from "../util/private-files.js";
import { type Clock, systemClock } from "../util/time.js";
import { ActivityStore } from "./activity.js";
import { AttachmentRows } from "./attachments.js";
import { ChangesStore } from "./changes.js";
import { DeviceStore } from "./devices.js";
import { InboxStore } from "./inbox.js";
import { migrate } from "./migrations.js";
import { ModeStore } from "./modes.js";
import { PushStore } from "./push.js";
import { QueueStore } from "./queue.js";
import { ResumeLog, type ResumeLogLimits } from "./resume-log.js";
import { ScheduleStore } from "./schedules.js";
import { SentRequests } from "./sent-requests.js";
import { SettingsStore } from "./settings.js";

/** A conversation row (timestamps in ms). */
export interface ConversationRow {
  id: string;
  name: string;
  session_id: string | null;
  source: string;
  created_at: number;
  last_active: number | null;
  deleted_at: number | null;
  user_renamed: number;
  /** 1 when archived (`inbox`; one state for every reader). */
  archived: number;
  /** The agent answering it (`workspaces`; null only before {@link Store.claimUnplaced} ran). */
  agent_id: string | null;
  /** Its workspace (`workspaces`; null as `agent_id`). */
  workspace_id: string | null;
  /** Its own working directory (a worktree's), never on the wire; null: its workspace's path. */
  workdir: string | null;
  /** The git branch of its worktree; null when it has none. */
  branch: string | null;
}

/** A new conversation's row: placement fields default to null. */
export type NewConversation = Omit<
  ConversationRow,
  | "deleted_at"
  | "user_renamed"
  | "last_active"
  | "archived"
  | "agent_id"
  | "workspace_id"
  | "workdir"
  | "branch"
> &
  Partial<Pick<ConversationRow, "agent_id" | "workspace_id" | "workdir" | "branch">>;

/** Filters of {@link Store.listConversations}. */
export interface ConversationFilter {
  agentId?: string;
  workspaceId?: string;
}

/** A transcript row; its wire ID is `m<id>`. */
export interface MessageRow {
  id: number;
  role: "user" | "assistant";
  text: string;
  ts: number | null;
  /** The `client_message_id` a user message was sent with (`resume`), else null. */
  client_message_id: string | null;
}

/** A run the last process left `running` (a crash, an unclean stop). */
export interface InterruptedRun {
  run_id: string;
  conversation_id: string;
}

/** The latest state of one tool call. */
export interface ToolRow {
  run_id: string;
  tool_call_id: string;
  conversation_id: string;
  tool_name: string;
  status: ToolStatus;
  args_json: string | null;
  duration_ms: number | null;
  error: string | null;
  ts: number;
  /** `activity`: the call's detail as JSON (a ToolDetail), the latest reported; null when none. */
  detail_json?: string | null;
}

/** File name of the database inside the data directory. */
export const DB_FILE = "pheby.sqlite";

/**
 * The SQLite store: conversations (with tombstones), the transcript mirror,
 * runs and tool states. Synchronous better-sqlite3 calls: each is a short
 * indexed statement, and a single-user server has no write contention.
 */
export class Store {
  /** The connection; only `store/` runs SQL on it (tests may inspect it). */
  readonly db: Database.Database;
  /** Global and per-conversation settings (migration v2). */
  readonly settings: SettingsStore;
  /** The attachment index (migration v3). */
  readonly attachments: AttachmentRows;
  /** Paired devices (migration v4, the `devices` extension). */
  readonly devices: DeviceStore;
  /** Push subscriptions (migration v5). */
  readonly push: PushStore;
  /** The per-conversation resume log of the `resume` extension. */
  readonly resumeLog: ResumeLog;
  /** Outcomes of requests sent with a `client_message_id` (`resume`). */
  readonly sentRequests: SentRequests;
  /** Follow-ups waiting for the active run (`queue`). */
  readonly queue: QueueStore;
  /** Each conversation's latest agent plan and usage (`activity`). */
  readonly activity: ActivityStore;
  /** Scheduled prompts (migration v7). */
  readonly schedules: ScheduleStore;
  /** Read marks, archive state and the transcript's search index (migration v12, `inbox`). */
  readonly inbox: InboxStore;
  /** Each conversation's chosen mode, its agent's modes and commands (migration v11, `modes`). */
  readonly modes: ModeStore;
  /** Each conversation's base commit and changes fingerprint (migration v15, `changes`). */
  readonly changes: ChangesStore;

  constructor(
    dataDir: string,
    options: { clock: Clock; resumeLogLimits?: ResumeLogLimits } = { clock: systemClock },
  ) {
    ensurePrivateDir(dataDir);
    const file = join(dataDir, DB_FILE);
    // SQLite creates a database 0644 (less the umask) and gives its -wal and -shm the database's
    // mode: created owner-only first, the three stay owner-only. Older files are fixed here too.
    ensurePrivateFile(file);
    restrictFile(`${file}-wal`);
    restrictFile(`${file}-shm`);
    this.db = new Database(file);
    this.db.pragma("journal_mode = WAL");
    // Deleted rows (a deleted conversation's transcript) are overwritten with zeros, in the
    // database and its WAL, instead of staying readable in free pages.
    this.db.pragma("secure_delete = ON");
    // FULL: every acknowledged write (a run.accepted user message, a renamed
    // conversation) survives power loss, not only a process crash. Writes are
    // a handful per run, so the extra fsync of the WAL costs nothing visible.
    this.db.pragma("synchronous = FULL");
    this.db.pragma("foreign_keys = ON");
    this.db.pragma("busy_timeout = 5000");
    migrate(this.db);
    this.settings = new SettingsStore(this.db);
    this.attachments = new AttachmentRows(this.db);
    this.devices = new DeviceStore(this.db);
    this.push = new PushStore(this.db);
    this.resumeLog = new ResumeLog(this.db, options.resumeLogLimits);
    this.sentRequests = new SentRequests(this.db, options.clock);
    this.queue = new QueueStore(this.db);
    this.schedules = new ScheduleStore(this.db);
    this.inbox = new InboxStore(this.db);
    this.modes = new ModeStore(this.db);
    this.activity = new ActivityStore(this.db);
    this.changes = new ChangesStore(this.db);
  }

  // ---- conversations ----

  createConversation(row: NewConversation): void {
    this.db
      .prepare(
        `INSERT INTO conversations (id, name, session_id, source, created_at, agent_id, workspace_id, workdir, branch)
         VALUES (@id, @name, @session_id, @source, @created_at, @agent_id, @workspace_id, @workdir, @branch)`,
      )
      .run({ agent_id: null, workspace_id: null, workdir: null, branch: null, ...row });
  }

  /**
   * Give rows older than the `workspaces` extension (agent null) to the default agent and
   * workspace, and the global settings stored before it to the default agent. Run at every start.
   */
  claimUnplaced(agentId: string, workspaceId: string): void {
    this.db.transaction(() => {
      this.db
        .prepare("UPDATE conversations SET agent_id = ?, workspace_id = ? WHERE agent_id IS NULL")
        .run(agentId, workspaceId);
      this.settings.claimGlobal(agentId);
    })();
  }

  /**
   * Record an agent session that must never be imported (a backend's own): a deleted conversation
   * row, since deleted sessions are already kept out of the import (see {@link knownSessionIds}).
   */
  hideSession(row: {
    id: string;
    session_id: string;
    source: string;
    at: number;
    agent_id?: string | null;
  }): void {
    this.db
      .prepare(
        "INSERT INTO conversations (id, name, session_id, source, created_at, deleted_at, agent_id) VALUES (@id, 'hidden agent session', @session_id, @source, @at, @at, @agent_id)",
      )
      .run({ agent_id: null, ...row });
  }

  /**
   * Bind a conversation to a new agent session (its old one was lost) and hide the old one, so the
   * agent's session list never brings it back as a conversation of its own. One transaction.
   */
  replaceSession(
    conversationId: string,
    sessionId: string,
    hidden: { id: string; source: string; at: number; agent_id?: string | null },
  ): void {
    this.db.transaction(() => {
      const old = this.db.prepare("SELECT session_id FROM conversations WHERE id = ?").get(conversationId) as
        | { session_id: string | null }
        | undefined;
      this.db.prepare("UPDATE conversations SET session_id = ? WHERE id = ?").run(sessionId, conversationId);
      if (old?.session_id && old.session_id !== sessionId)
        this.hideSession({ ...hidden, session_id: old.session_id });
    })();
  }

  /** A live (not deleted) conversation. */
  getConversation(id: string): ConversationRow | undefined {
    return this.db.prepare("SELECT * FROM conversations WHERE id = ? AND deleted_at IS NULL").get(id) as
      | ConversationRow
      | undefined;
  }

  /** True when a conversation with this ID was ever created here (deleted ones included). */
  conversationExisted(id: string): boolean {
    return this.db.prepare("SELECT 1 FROM conversations WHERE id = ?").get(id) !== undefined;
  }

  /**
   * The live conversation bound to an agent session: sessions are keyed by agent and session id.
   * Without `agentId` (a caller that cannot tell the agent), only a session id no two agents share.
   */
  conversationBySession(sessionId: string, agentId?: string): ConversationRow | undefined {
    if (agentId !== undefined)
      return this.db
        .prepare("SELECT * FROM conversations WHERE session_id = ? AND agent_id = ? AND deleted_at IS NULL")
        .get(sessionId, agentId) as ConversationRow | undefined;
    const rows = this.db
      .prepare("SELECT * FROM conversations WHERE session_id = ? AND deleted_at IS NULL LIMIT 2")
      .all(sessionId) as ConversationRow[];
    return rows.length === 1 ? rows[0] : undefined;
  }

  /**
   * Every session ID of an agent the store has seen, deleted and hidden ones included (so a
   * deleted session is not re-imported).
   */
  knownSessionIds(agentId: string): Set<string> {
    const rows = this.db
      .prepare("SELECT session_id FROM conversations WHERE session_id IS NOT NULL AND agent_id = ?")
      .all(agentId) as { session_id: string }[];
    return new Set(rows.map((r) => r.session_id));
  }

  /** Live conversations, most recently active first; `filter` keeps one agent's or workspace's. */
  listConversations(filter: ConversationFilter = {}): ConversationRow[] {
    return this.db
      .prepare(
        `SELECT * FROM conversations WHERE deleted_at IS NULL
           AND (@agent IS NULL OR agent_id = @agent) AND (@workspace IS NULL OR workspace_id = @workspace)
         ORDER BY COALESCE(last_active, created_at) DESC, rowid DESC`,
      )
      .all({ agent: filter.agentId ?? null, workspace: filter.workspaceId ?? null }) as ConversationRow[];
  }

  renameConversation(id: string, name: string, byUser: boolean): void {
    this.db
      .prepare("UPDATE conversations SET name = ?, user_renamed = MAX(user_renamed, ?) WHERE id = ?")
      .run(name, byUser ? 1 : 0, id);
  }

  touchConversation(id: string, ts: number): void {
    this.db.prepare("UPDATE conversations SET last_active = ? WHERE id = ?").run(ts, id);
  }

  /**
   * Tombstone a conversation and drop its transcript, tool states and resume log. The tombstone
   * keeps only what stops the agent's session from being imported again (id, session, source,
   * times): its name, user text like the transcript, is cleared. With `secure_delete` the freed
   * space is zeroed; the checkpoint then copies the zeroed pages into the database file and empties
   * the WAL, whose older frames still held the text.
   */
  deleteConversation(id: string, ts: number): void {
    this.db.transaction(() => {
      // The search index loses the messages' terms in the same statement (store/inbox.ts's triggers).
      this.db.prepare("DELETE FROM messages WHERE conversation_id = ?").run(id);
      this.inbox.forget(id);
      this.db.prepare("DELETE FROM tool_calls WHERE conversation_id = ?").run(id);
      this.activity.forget(id);
      this.changes.forget(id);
      this.db.prepare("UPDATE conversations SET deleted_at = ?, name = '' WHERE id = ?").run(ts, id);
      this.resumeLog.forget(id);
    })();
    // Best effort: a reader in another process (an operator command) can keep it from completing.
    this.db.pragma("wal_checkpoint(TRUNCATE)");
  }

  // ---- transcript ----

  /** Append a transcript message; returns its row ID. Also bumps the conversation's `last_active`. */
  addMessage(
    conversationId: string,
    role: "user" | "assistant",
    text: string,
    ts: number,
    runId: string | null,
    clientMessageId: string | null = null,
  ) {
    return this.db.transaction(() => {
      const info = this.db
        .prepare(
          "INSERT INTO messages (conversation_id, role, text, ts, run_id, client_message_id) VALUES (?, ?, ?, ?, ?, ?)",
        )
        .run(conversationId, role, text, ts, runId, clientMessageId);
      this.touchConversation(conversationId, ts);
      return Number(info.lastInsertRowid);
    })();
  }

  /**
   * Copy an agent's replayed history into an empty mirror, atomically. Does nothing (returns 0)
   * when the conversation is gone or already has messages, e.g. a run started meanwhile.
   * `last_active` is left alone: a replay is not activity.
   */
  importHistory(
    conversationId: string,
    entries: ReadonlyArray<{ role: "user" | "assistant"; text: string; ts: number | null }>,
  ): number {
    return this.db.transaction(() => {
      const empty =
        this.getConversation(conversationId) !== undefined &&
        this.db.prepare("SELECT 1 FROM messages WHERE conversation_id = ?").get(conversationId) === undefined;
      if (!empty) return 0;
      const insert = this.db.prepare(
        "INSERT INTO messages (conversation_id, role, text, ts, run_id) VALUES (?, ?, ?, ?, NULL)",
      );
      for (const e of entries) insert.run(conversationId, e.role, e.text, e.ts);
      return entries.length;
    })();
  }

  /** True when message row `id` belongs to the conversation. */
  hasMessage(conversationId: string, id: number): boolean {
    return (
      this.db
        .prepare("SELECT 1 FROM messages WHERE id = ? AND conversation_id = ?")
        .get(id, conversationId) !== undefined
    );
  }

  /**
   * The newest messages before `beforeId` (exclusive), in chronological order: at most `limit`
   * of them and at most `maxBytes` of text (UTF-8), but always at least one, so paging progresses.
   * Sizes are read first (SQLite computes them; no text reaches JS), then only the page's texts.
   */
  messagePage(
    conversationId: string,
    limit: number,
    beforeId?: number,
    maxBytes = Number.POSITIVE_INFINITY,
  ): { rows: MessageRow[]; hasMore: boolean } {
    const before = beforeId ?? Number.MAX_SAFE_INTEGER;
    const sizes = this.db
      .prepare(
        "SELECT id, length(CAST(text AS BLOB)) AS bytes FROM messages WHERE conversation_id = ? AND id < ? ORDER BY id DESC LIMIT ?",
      )
      .iterate(conversationId, before, limit + 1) as IterableIterator<{ id: number; bytes: number }>;
    let oldest: number | undefined;
    let taken = 0;
    let bytes = 0;
    let hasMore = false;
    for (const row of sizes) {
      if (taken === limit || (taken > 0 && bytes + row.bytes > maxBytes)) {
        hasMore = true;
        break; // ends the iteration and resets the statement
      }
      taken++;
      bytes += row.bytes;
      oldest = row.id;
    }
    if (oldest === undefined) return { rows: [], hasMore: false };
    const rows = this.db
      .prepare(
        "SELECT id, role, text, ts, client_message_id FROM messages WHERE conversation_id = ? AND id >= ? AND id < ? ORDER BY id",
      )
      .all(conversationId, oldest, before) as MessageRow[];
    return { rows, hasMore };
  }

  // ---- runs and tools ----

  /**
   * Record an accepted run and, when given, its user message (with the `client_message_id` it was
   * sent with), atomically; returns the message's row ID.
   */
  startRun(
    runId: string,
    conversationId: string,
    ts: number,
    userText: string | null,
    clientMessageId: string | null = null,
  ): number | null {
    return this.db.transaction(() => {
      this.db
        .prepare("INSERT INTO runs (run_id, conversation_id, status, started_at) VALUES (?, ?, 'running', ?)")
        .run(runId, conversationId, ts);
      if (userText !== null) {
        return this.addMessage(conversationId, "user", userText, ts, runId, clientMessageId);
      }
      this.touchConversation(conversationId, ts);
      return null;
    })();
  }

  /** Run `fn` in one transaction (nested calls become savepoints): all of it is stored, or none. */
  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn)();
  }

  /**
   * Record a run's end and its assistant message: when the text is non-empty, or when `keepEmpty`
   * (the run delivered files, which need a message to belong to). Returns the message's row ID, or null.
   */
  finishRun(
    runId: string,
    conversationId: string,
    status: RunStatus,
    ts: number,
    error: string | null,
    text: string,
    keepEmpty = false,
  ): number | null {
    return this.db.transaction(() => {
      this.db
        .prepare("UPDATE runs SET status = ?, finished_at = ?, error = ? WHERE run_id = ?")
        .run(status, ts, error, runId);
      this.db
        .prepare("UPDATE tool_calls SET status = 'cancelled', ts = ? WHERE run_id = ? AND status = 'running'")
        .run(ts, runId);
      if ((text !== "" || keepEmpty) && this.getConversation(conversationId)) {
        return this.addMessage(conversationId, "assistant", text, ts, runId);
      }
      return null;
    })();
  }

  /**
   * Mark runs left `running` by a crash or an unclean stop as failed, recording as their answer
   * the text `draft(run)` says was streamed before (empty: none); returns them.
   */
  failInterruptedRuns(
    ts: number,
    error: string,
    draft: (run: InterruptedRun) => string = () => "",
  ): InterruptedRun[] {
    return this.db.transaction(() => {
      const runs = this.db
        .prepare("SELECT run_id, conversation_id FROM runs WHERE status = 'running'")
        .all() as InterruptedRun[];
      for (const run of runs) {
        this.finishRun(run.run_id, run.conversation_id, "failed", ts, error, draft(run));
      }
      return runs;
    })();
  }

  /**
   * Record a tool call's latest state. A later `running` may carry a fuller name or arguments
   * (agents fill a call in over several updates), so both are the latest seen; an end event carries
   * no arguments and keeps the last ones.
   */
  upsertTool(row: ToolRow): void {
    this.db
      .prepare(
        `INSERT INTO tool_calls (run_id, tool_call_id, conversation_id, tool_name, status, args_json, duration_ms, error, ts, detail_json)
         VALUES (@run_id, @tool_call_id, @conversation_id, @tool_name, @status, @args_json, @duration_ms, @error, @ts, @detail_json)
         ON CONFLICT (run_id, tool_call_id) DO UPDATE SET
           tool_name = excluded.tool_name, args_json = COALESCE(excluded.args_json, tool_calls.args_json),
           status = excluded.status, duration_ms = excluded.duration_ms, error = excluded.error, ts = excluded.ts,
           detail_json = COALESCE(excluded.detail_json, tool_calls.detail_json)`,
      )
      .run({ ...row, detail_json: row.detail_json ?? null });
  }

  /** `activity`: the latest state of one tool call of a conversation, whichever run it was in. */
  toolCall(conversationId: string, toolCallId: string): ToolRow | undefined {
    return this.db
      .prepare(
        `SELECT * FROM tool_calls WHERE conversation_id = ? AND tool_call_id = ?
         ORDER BY ts DESC, rowid DESC LIMIT 1`,
      )
      .get(conversationId, toolCallId) as ToolRow | undefined;
  }

  /** Tool states of the conversation's most recent run. */
  latestRunTools(conversationId: string): ToolRow[] {
    return this.db
      .prepare(
        `SELECT * FROM tool_calls WHERE run_id = (
           SELECT run_id FROM runs WHERE conversation_id = ? ORDER BY started_at DESC, rowid DESC LIMIT 1
         ) ORDER BY rowid`,
      )
      .all(conversationId) as ToolRow[];
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
