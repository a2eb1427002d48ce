import { performance } from "node:perf_hooks";
import {
  FEATURE_ACTIVITY,
  type HistoryThought,
  LIMITS,
  type RunState,
  type RunStatus,
  type ServerMessage,
  type ToolState,
} from "@pheby/protocol";
import type { Logger } from "pino";
import { boundDetail } from "../activity/bound.js";
import type { ToolDetail } from "../activity/tool-detail.js";
import type {
  ClarifyAnswer,
  ClarifyQuestion,
  ProducedFile,
  TranscriptTail,
  TurnResult,
  TurnSink,
} from "../agent/port.js";
import type { AgentRegistry } from "../agents/registry.js";
import type { AttachmentStore, Claimed } from "../attachments/store.js";
import type { Asker, Decisions } from "../decisions/decisions.js";
import { ProtocolError } from "../errors.js";
import { eventOf, type Origin, type Outbox } from "../outbox/outbox.js";
import type { Modes } from "../settings/modes.js";
import type { Settings } from "../settings/settings.js";
import type { AttachmentRow } from "../store/attachments.js";
import type { ConversationRow, Store, ToolRow } from "../store/store.js";
import { newId } from "../util/ids.js";
import { redactArgs, truncate } from "../util/redact.js";
import { type Clock, iso } from "../util/time.js";
import type { AgentActivity } from "./activity.js";
import { CoalescedText } from "./stream.js";
import { RunThoughts } from "./thoughts.js";

/** Default of {@link RunEngineDeps.cancelGraceMs}. */
export const DEFAULT_CANCEL_GRACE_MS = 5_000;
/** Error text of a run whose backend threw (details go to the log only). */
export const BACKEND_FAILED = "The agent backend failed";

interface ToolCall {
  name: string;
  startedAt: number;
  status: ToolState["status"];
  /** `activity`: its latest detail, as reported. */
  detail?: ToolDetail;
  /** `activity`: the content last published, serialised: events repeat it only when it changed. */
  sentContent?: string;
}

/** One run: server-owned state of an assistant turn. */
class Run {
  readonly messageId: string;
  readonly controller = new AbortController();
  /** The answer, streamed as `message.delta` (set by the engine, which owns the publishing). */
  answer!: CoalescedText;
  /** The agent's thinking, streamed as `thought.*` to `thoughts` connections. */
  thoughts!: RunThoughts;
  /** The agent session key shown on this run's approvals and clarifications. */
  sessionKey = "";
  finished = false;
  cancelRequested = false;
  /** The `run.cancel` its `run.finished` (cancelled) answers, if a client cancelled it. */
  cancelOrigin: Origin | undefined;
  notices = 0;
  /** Files the agent delivered in this run (stored under the draft ID until the run ends). */
  files = 0;
  /** `m<n>` of the assistant message recorded at the end, once there is one. */
  finalMessageId: string | undefined;
  readonly tools = new Map<string, ToolCall>();
  graceTimer: NodeJS.Timeout | undefined;
  /** How it ended, once it has. */
  status: RunStatus | undefined;
  /** The sink its backend reports through (Pheby's own tools ask and deliver through it too). */
  sink: TurnSink | undefined;
  readonly done: Promise<void>;
  resolveDone!: () => void;

  constructor(
    readonly conversationId: string,
    readonly startedAt: number,
    readonly runId: string = newId(),
    readonly owner: RunOwner = UNATTENDED,
  ) {
    this.messageId = `draft-${this.runId}`;
    this.done = new Promise((resolve) => {
      this.resolveDone = resolve;
    });
  }

  /** The answer's cumulative text so far. */
  get text(): string {
    return this.answer.text;
  }
}

/** What the engine needs from the server. */
export interface RunEngineDeps {
  /** Where a run's plan and usage go (`activity`). */
  activity: AgentActivity;
  store: Store;
  attachments: AttachmentStore;
  outbox: Outbox;
  /** Each conversation's agent: a turn goes to its own backend. */
  agents: AgentRegistry;
  decisions: Decisions;
  settings: Settings;
  /** The conversations' agent modes (`modes`); absent: turns carry no mode. */
  modes?: Modes;
  clock: Clock;
  log: Logger;
  logChatContent: boolean;
  /**
   * Deltas of one message are coalesced to at most one per this many ms: the
   * first chunk goes out at once, later ones wait for the window (0 sends one
   * delta per chunk). `message.complete` always carries the exact final text.
   */
  deltaIntervalMs: number;
  /** After `run.cancel`, how long the backend gets to stop before the run is finished as cancelled anyway. */
  cancelGraceMs: number;
}

/**
 * Who set a run in motion. A revoked device's runs are cancelled; YOLO answers a permission
 * question only in a run that may be auto-approved.
 */
export interface RunOwner {
  /** The paired device behind it (its send, its queued follow-up, its schedule); null: the owner, or nobody. */
  deviceId: string | null;
  /**
   * YOLO may approve its questions: true for a run a client started; a run nobody started from a
   * client (a schedule, an agent's wake-up) only when its schedule has `auto_approve`.
   */
  autoApprove: boolean;
}

/** A run nobody started from a client: never auto-approved. */
export const UNATTENDED: RunOwner = Object.freeze({ deviceId: null, autoApprove: false });

/** What else a `send` may say about its run. */
export interface SendOptions {
  /** Who started it; default: the owner, from a client (YOLO applies). */
  owner?: RunOwner;
  /** The run's ID when it was given earlier (a queued run's `run.queued`); default a new one. */
  runId?: string;
  /** The `client_message_id` the user message was sent with (`resume`), recorded with it. */
  clientMessageId?: string | undefined;
  /**
   * A client asked for the run (its `chat.send`, or its follow-up the queue starts now); default
   * true. False for a prompt of the server's own that went through the queue. {@link RunEvent}s say it.
   */
  byClient?: boolean;
}

// ---- Run events -------------------------------------------------------------------------------
// What the engine tells the rest of the server about its runs, typed, so that observers (the queue
// starting the next follow-up, push notifications) follow runs without reading outbox events back.

/** A run was accepted: its `run.accepted` went out. */
export interface RunAccepted {
  type: "accepted";
  conversationId: string;
  runId: string;
  /** A client asked for it (its `chat.send`, its queued follow-up); false: the server or the agent did. */
  byClient: boolean;
  owner: RunOwner;
}

/** A run ended: its `message.complete` and `run.finished` went out. */
export interface RunFinished {
  type: "finished";
  conversationId: string;
  runId: string;
  byClient: boolean;
  status: RunStatus;
  /** The error `run.finished` carried (a failed run only). */
  error?: string;
  /** The answer's final text, as its `message.complete` carried it. */
  text: string;
  /** It ended because the server is shutting down (which keeps the queue for the next start). */
  shutdown: boolean;
}

/** One event of a run's life, in the order its messages went out. */
export type RunEvent = RunAccepted | RunFinished;

/** An observer of {@link RunEvent}s. */
export type RunListener = (event: RunEvent) => void;

/**
 * The run engine: run IDs, one active run per conversation, the state machine
 * run.accepted → message.start → message.delta* → message.complete → exactly
 * one run.finished, cancellation, tool events and notices. Backends only
 * report through a {@link TurnSink}; everything the protocol promises is
 * enforced here, whatever the backend does (throws, hangs after cancel,
 * reports after the end).
 */
export class RunEngine {
  readonly #active = new Map<string, Run>();
  #closed = false;

  constructor(private readonly deps: RunEngineDeps) {}

  /** Whether the conversation has an active run. */
  busy(conversationId: string): boolean {
    return this.#active.has(conversationId);
  }

  /** Whether the conversation's active run may not be auto-approved (nobody started it from a client). */
  askingRun(conversationId: string): boolean {
    const run = this.#active.get(conversationId);
    return run !== undefined && !run.owner.autoApprove;
  }

  /** The active run of a conversation as `conversation.history.run` shows it. */
  state(conversationId: string): RunState | null {
    const run = this.#active.get(conversationId);
    if (!run) return null;
    return {
      run_id: run.runId,
      conversation_id: run.conversationId,
      message_id: run.messageId,
      status: "running",
      text: run.text,
      started_at: iso(run.startedAt),
    };
  }

  /** `thoughts`: the active run's thoughts so far, oldest first; none without an active run. */
  thoughts(conversationId: string): HistoryThought[] {
    return this.#active.get(conversationId)?.thoughts.list() ?? [];
  }

  /**
   * Latest tool states of the active or most recent run; with `activity`, each with its detail
   * (`conversation.history` on an `activity` connection).
   */
  tools(conversationId: string, activity = false): ToolState[] {
    return this.deps.store.latestRunTools(conversationId).map((row) => toolState(row, activity));
  }

  /**
   * `tool.get`: the latest state of a recorded tool call of the conversation, with its detail, or
   * undefined when the conversation has no such call.
   */
  tool(conversationId: string, toolCallId: string): ToolState | undefined {
    const row = this.deps.store.toolCall(conversationId, toolCallId);
    return row && toolState(row, true);
  }

  /** `activity`: the content last reported for a tool call of a conversation's active run (an approval's preview). */
  toolContent(conversationId: string, toolCallId: string): ToolDetail["content"] {
    return this.#active.get(conversationId)?.tools.get(toolCallId)?.detail?.content;
  }

  /**
   * `chat.send`: start a run for a user message. Throws `run_active` when one
   * is running. `origin` is who asked: its peer's copy of `run.accepted` is the
   * reply and carries its `requestId`; a run nobody asked for live (no peer)
   * is accepted all the same. `claim` is called with the user message's wire ID
   * inside the transaction that records it; if it throws, nothing is recorded.
   */
  send(
    conv: ConversationRow,
    text: string,
    origin: Origin = {},
    claim: (messageId: string) => Claimed[] = () => [],
    options: SendOptions = {},
  ): string {
    if (this.#active.has(conv.id)) {
      throw new ProtocolError("run_active", "A run is already active in this conversation");
    }
    const { run, claimed, messageRow } = this.#begin(conv.id, text, claim, {
      owner: { deviceId: null, autoApprove: true },
      ...options,
    });
    run.sessionKey = conv.session_id ?? conv.id;
    // Every device learns of the run before its message.start; only the sender's copy is the reply.
    this.#publish({ type: "run.accepted", conversation_id: conv.id, run_id: run.runId }, origin);
    this.#runAccepted(run, options.byClient ?? true);
    for (const { descriptor } of claimed) {
      this.#publish({
        type: "attachment.added",
        conversation_id: conv.id,
        attachment: descriptor,
        ts: this.#ts(),
      });
    }
    this.#startMessage(run);
    // Settings are read as the turn starts: a change during a run applies from the next turn.
    void this.#drive(run, (sink, signal) =>
      this.#promptBackend(run, { text, attachments: claimed, messageRow }, sink, signal),
    );
    return run.runId;
  }

  /**
   * Output the agent produced outside any turn. A notice is a bare
   * `message.complete` with `kind: "notice"`; text becomes a server-side run
   * (broadcast `run.accepted` without request_id, message.*, run.finished),
   * waiting its turn behind the conversation's active run if there is one.
   */
  async unsolicited(conv: ConversationRow, text: string, kind?: "notice"): Promise<void> {
    if (kind === "notice") {
      this.#publish({
        type: "message.complete",
        conversation_id: conv.id,
        message_id: `notice-${newId()}`,
        text,
        kind: "notice",
        ts: this.#ts(),
      });
      return;
    }
    await this.#serverRun(conv, null, async (sink) => {
      sink.text(text);
      return { status: "completed" };
    });
  }

  /**
   * Send `prompt` to the agent in the conversation as a run nobody on the socket asked for (a
   * scheduled prompt): `run.accepted` without `request_id` to every connection, the prompt recorded
   * as the run's user message, then the usual sequence. It waits its turn behind the conversation's
   * active run. Resolves with how the run ended; `gone` when the conversation no longer exists
   * (or the server is closing) by the time it would start.
   */
  runPrompt(
    conv: ConversationRow,
    prompt: string,
    owner: RunOwner = UNATTENDED,
  ): Promise<RunStatus | "gone"> {
    return this.#serverRun(
      conv,
      prompt,
      (sink, signal, current, messageRow) =>
        this.#promptBackend(current, { text: prompt, messageRow }, sink, signal),
      owner,
    );
  }

  /**
   * Wake the agent with `text` it asked to be prompted with (a backend's background completion,
   * e.g. Hermes's `_hermes/notification`): like {@link runPrompt}, but the text is the agent's own and
   * is not recorded as a user message; `meta` goes back to the backend with the prompt.
   */
  wake(conv: ConversationRow, text: string, meta?: Record<string, unknown>): Promise<RunStatus | "gone"> {
    return this.#serverRun(conv, null, (sink, signal, current) =>
      this.#promptBackend(current, { text, messageRow: null, ...(meta ? { meta } : {}) }, sink, signal),
    );
  }

  /**
   * Ask the user a clarification in the conversation's active run, on behalf of Pheby's
   * `ask_user` tool (the agent is inside that run's turn when it calls a tool). Null when the
   * conversation has no active run.
   */
  ask(
    conversationId: string,
    question: ClarifyQuestion,
    withdraw: AbortSignal,
  ): Promise<ClarifyAnswer> | null {
    const run = this.#active.get(conversationId);
    if (!run?.sink) return null;
    return run.sink.askClarification(question, withdraw);
  }

  /**
   * Deliver a host file into the conversation (Pheby's `send_file` tool): into the active run's
   * answer, with `caption` as a line of it, or else as a run of its own. Resolves with the
   * stored name, or null when the store refused it (outside the allowed roots, not a regular file).
   */
  async deliverFile(
    conv: ConversationRow,
    path: string,
    caption: string | undefined,
  ): Promise<{ filename: string } | null> {
    const run = this.#active.get(conv.id);
    if (run?.sink && !this.#ending(run)) {
      const row = await this.#deliver(run, { source: "path", path });
      if (row && caption) run.sink.text(`\n\n${caption}\n`);
      return row ? { filename: row.filename } : null;
    }
    let delivered: { filename: string } | null = null;
    await this.#serverRun(conv, null, async (sink, _signal, current) => {
      const row = await this.#deliver(current, { source: "path", path });
      delivered = row ? { filename: row.filename } : null;
      if (caption) sink.text(caption);
      return { status: "completed" };
    });
    return delivered;
  }

  /** A device was revoked: cancel every active run it set in motion; returns how many. */
  cancelDevice(deviceId: string): number {
    let cancelled = 0;
    for (const run of this.#active.values()) {
      if (run.owner.deviceId !== deviceId || run.cancelRequested || run.finished) continue;
      this.#requestCancel(run);
      cancelled++;
    }
    return cancelled;
  }

  /**
   * `run.cancel`. Throws `not_found` for a stale, unknown or already-cancelling run. `origin` is the
   * request the run's single `run.finished` (cancelled) answers, whenever the run ends.
   */
  cancel(conversationId: string, runId: string, origin?: Origin): void {
    const run = this.#active.get(conversationId);
    if (!run || run.runId !== runId || run.cancelRequested) {
      throw new ProtocolError("not_found", "No such active run");
    }
    this.#requestCancel(run, origin);
  }

  /**
   * A run the server starts (unsolicited output, a scheduled prompt, a wake-up): it waits for the
   * conversation's active run to end, then runs without a requester. A queued follow-up that the
   * ending run starts goes first (the queue's `next` runs before `done` resolves); a scheduled prompt
   * that finds the conversation busy joins the queue instead (`RunQueue.serverPrompt`).
   */
  async #serverRun(
    conv: ConversationRow,
    userText: string | null,
    produce: (
      sink: TurnSink,
      signal: AbortSignal,
      run: Run,
      messageRow: number | null,
    ) => Promise<TurnResult>,
    owner: RunOwner = UNATTENDED,
  ): Promise<RunStatus | "gone"> {
    for (let active = this.#active.get(conv.id); active; active = this.#active.get(conv.id)) {
      await active.done;
    }
    if (this.#closed || !this.deps.store.getConversation(conv.id)) return "gone";
    const { run, messageRow } = this.#begin(conv.id, userText, undefined, { owner });
    run.sessionKey = conv.session_id ?? conv.id;
    this.#publish({ type: "run.accepted", conversation_id: conv.id, run_id: run.runId });
    this.#runAccepted(run, false);
    this.#startMessage(run);
    await this.#drive(run, (sink, signal) => produce(sink, signal, run, messageRow));
    return run.status ?? "failed";
  }

  /**
   * A turn of the backend: the conversation's session, its settings read as the turn starts, the
   * transcript before the turn's user message (`messageRow`; null: none, so all of it) on demand.
   */
  async #promptBackend(
    run: Run,
    turn: {
      text: string;
      attachments?: Claimed[];
      messageRow: number | null;
      meta?: Record<string, unknown>;
    },
    sink: TurnSink,
    signal: AbortSignal,
  ): Promise<TurnResult> {
    const conv = this.deps.store.getConversation(run.conversationId);
    if (!conv) return { status: "failed", error: "The conversation was deleted" };
    const settings = await this.deps.settings.forTurn(conv.id);
    // Nobody watches a run that may not be auto-approved: the agent's own YOLO mode stays off too,
    // and so does any mode that approves without asking.
    const asking = !run.owner.autoApprove;
    if (asking) {
      settings.yolo = false;
      settings.asking = true;
    }
    const mode = this.deps.modes?.forTurn(conv.id, asking);
    if (mode) settings.mode = mode;
    return this.deps.agents.use(conv).prompt(
      {
        conversationId: conv.id,
        sessionId: conv.session_id ?? "",
        cwd: this.deps.agents.workdirOf(conv),
        text: turn.text,
        attachments: (turn.attachments ?? []).map((c) => c.ref),
        settings,
        history: (maxBytes: number) => this.#historyBefore(conv.id, turn.messageRow, maxBytes),
        ...(turn.meta ? { meta: turn.meta } : {}),
      },
      sink,
      signal,
    );
  }

  /** Cancel the conversation's active run (if any) and wait until it has finished. */
  async cancelAndWait(conversationId: string): Promise<void> {
    const run = this.#active.get(conversationId);
    if (!run) return;
    if (!run.cancelRequested) this.#requestCancel(run);
    await run.done;
  }

  /** Shutdown: every active run is finished as failed now; late backend output is ignored. */
  shutdown(): void {
    this.#closed = true;
    for (const run of [...this.#active.values()]) {
      run.controller.abort();
      this.#finish(run, { status: "failed", error: "Server shutting down" });
    }
  }

  #ts(): string {
    return iso(this.deps.clock.now());
  }

  /** Every run event names its conversation; a reply's origin marks the copy that carries its request_id. */
  #publish(message: ServerMessage & { conversation_id: string }, replyTo?: Origin): void {
    this.deps.outbox.publish(eventOf(message, replyTo));
  }

  /** The transcript before a turn's user message, newest within `maxBytes` (for a replacement agent session). */
  #historyBefore(conversationId: string, before: number | null, maxBytes: number): TranscriptTail {
    const { rows, hasMore } = this.deps.store.messagePage(
      conversationId,
      LIMITS.historyPage,
      before ?? undefined,
      maxBytes,
    );
    return { entries: rows.map(({ role, text }) => ({ role, text })), more: hasMore };
  }

  #begin(
    conversationId: string,
    userText: string | null,
    claim: (messageId: string) => Claimed[] = () => [],
    options: SendOptions = {},
  ): { run: Run; claimed: Claimed[]; messageRow: number | null } {
    const run = new Run(conversationId, this.deps.clock.now(), options.runId, options.owner);
    this.#streams(run);
    const { store } = this.deps;
    const { claimed, messageRow } = store.transaction(() => {
      const messageRow = store.startRun(
        run.runId,
        conversationId,
        run.startedAt,
        userText,
        options.clientMessageId ?? null,
      );
      return { claimed: messageRow === null ? [] : claim(`m${messageRow}`), messageRow };
    });
    this.#active.set(conversationId, run);
    this.deps.log.debug(
      {
        conversation: conversationId,
        run: run.runId,
        ...(this.deps.logChatContent && userText ? { text: userText } : {}),
      },
      "run accepted",
    );
    return { run, claimed, messageRow };
  }

  /** The run's answer and thoughts, coalesced with the same window, published as the run's events. */
  #streams(run: Run): void {
    const { deltaIntervalMs } = this.deps;
    run.answer = new CoalescedText(deltaIntervalMs, (text) => {
      if (run.finished) return;
      this.#publish({
        type: "message.delta",
        conversation_id: run.conversationId,
        message_id: run.messageId,
        text,
        ts: this.#ts(),
      });
    });
    const ids = { conversation_id: run.conversationId, run_id: run.runId };
    // Published cumulative (offset 0, the whole thought): the Fanout cuts each peer's append delta.
    run.thoughts = new RunThoughts(run.runId, deltaIntervalMs, {
      delta: (thought_id, text) => {
        if (!run.finished)
          this.#publish({ type: "thought.delta", ...ids, thought_id, offset: 0, text, ts: this.#ts() });
      },
      complete: (thought_id, text) =>
        this.#publish({ type: "thought.complete", ...ids, thought_id, text, ts: this.#ts() }),
    });
  }

  #startMessage(run: Run): void {
    this.#publish({
      type: "message.start",
      conversation_id: run.conversationId,
      run_id: run.runId,
      message_id: run.messageId,
    });
  }

  #requestCancel(run: Run, origin?: Origin): void {
    run.cancelRequested = true;
    run.cancelOrigin = origin;
    // Pending questions go first, so clients drop them before the run's single run.finished.
    this.deps.decisions.withdrawRun(run.runId);
    run.controller.abort();
    // A backend that ignores the abort must not keep the conversation busy forever.
    run.graceTimer = setTimeout(() => this.#finish(run, { status: "cancelled" }), this.deps.cancelGraceMs);
    run.graceTimer.unref();
  }

  async #drive(
    run: Run,
    produce: (sink: TurnSink, signal: AbortSignal) => Promise<TurnResult>,
  ): Promise<void> {
    let result: TurnResult;
    run.sink = this.#sink(run);
    try {
      result = await produce(run.sink, run.controller.signal);
    } catch (err) {
      this.deps.log.error({ err, run: run.runId }, "agent backend threw during a turn");
      result = { status: "failed", error: BACKEND_FAILED };
    }
    this.#finish(run, result);
  }

  #sink(run: Run): TurnSink {
    return {
      text: (chunk) => {
        if (run.finished || typeof chunk !== "string" || chunk === "") return;
        // The agent answers: its thinking so far is one thought, ended before the answer goes on.
        run.thoughts.end();
        run.answer.append(chunk);
      },
      thought: (chunk) => {
        if (run.finished || typeof chunk !== "string" || chunk === "") return;
        // A new thought goes out after the answer streamed before it, as tool events do.
        if (!run.thoughts.streaming) run.answer.flush();
        run.thoughts.append(chunk);
      },
      // The answer streamed so far goes first, so the plan and usage land where they happened.
      plan: (entries) => {
        if (run.finished) return;
        run.answer.flush();
        this.deps.activity.plan(run.conversationId, run.runId, entries);
      },
      usage: (usage) => {
        if (run.finished) return;
        run.answer.flush();
        this.deps.activity.usage(run.conversationId, usage);
      },
      toolStart: (call) => {
        if (run.finished) return;
        this.#flushDelta(run);
        // A repeated start (fuller arguments) keeps the first start time.
        const known = run.tools.get(call.toolCallId);
        const tool: ToolCall = {
          ...known,
          name: call.toolName,
          startedAt: known?.startedAt ?? performance.now(),
          status: "running",
        };
        if (call.detail) tool.detail = call.detail;
        run.tools.set(call.toolCallId, tool);
        const args = call.args ? redactArgs(call.args) : undefined;
        this.#tool(run, call.toolCallId, call.toolName, "running", { args });
      },
      toolEnd: (call) => {
        if (run.finished) return;
        this.#flushDelta(run);
        const known = run.tools.get(call.toolCallId);
        const duration = known ? Math.round(performance.now() - known.startedAt) : null;
        if (known) known.status = call.status;
        if (known && call.detail) known.detail = call.detail;
        const error = call.status === "failed" ? truncate(call.error ?? "Tool failed") : undefined;
        this.#tool(run, call.toolCallId, known?.name ?? "unknown", call.status, { duration, error });
      },
      toolDetail: (call) => {
        const known = run.tools.get(call.toolCallId);
        if (run.finished || !known) return;
        known.detail = call.detail;
        // Nothing a v1 connection sees changed: only activity connections get this event.
        this.#tool(run, call.toolCallId, known.name, known.status, { detailOnly: true });
      },
      sessionReplaced: (sessionId) => {
        // Kept even if the run has just ended: the backend goes on using the new session.
        if (!this.deps.store.getConversation(run.conversationId)) return;
        const agent = this.deps.agents.agentOf(run.conversationId);
        this.deps.store.replaceSession(run.conversationId, sessionId, {
          id: newId(),
          agent_id: agent.id,
          source: agent.backend.name,
          at: this.deps.clock.now(),
        });
        run.sessionKey = sessionId;
        // What the agent already said about the new session (its modes, its commands) is the conversation's now.
        const conv = this.deps.store.getConversation(run.conversationId);
        if (conv) this.deps.modes?.catchUp(conv);
        this.deps.log.info(
          { conversation: run.conversationId, session: sessionId },
          "the conversation continues in a new agent session",
        );
      },
      notice: (text) => {
        if (run.finished) return;
        this.#flushDelta(run);
        run.notices += 1;
        // A notice in a run gets its own message_id so it never replaces the draft answer.
        this.#publish({
          type: "message.complete",
          conversation_id: run.conversationId,
          message_id: `notice-${run.runId}-${run.notices}`,
          text,
          kind: "notice",
          ts: this.#ts(),
        });
      },
      // A question asked once the run is ending is answered "cancelled" at once, never broadcast.
      // Like tool events, questions, notices and files first flush the text streamed before them,
      // so clients can show each where it happened in the answer.
      askPermission: async (question, withdraw) => {
        if (this.#ending(run)) return { outcome: "cancelled" };
        this.#flushDelta(run);
        // Without a preview of its own, the question shows what its call was last reported to do.
        const content =
          question?.preview === undefined && typeof question?.toolCallId === "string"
            ? run.tools.get(question.toolCallId)?.detail?.content
            : undefined;
        const asked = content ? { ...question, preview: content } : question;
        return this.deps.decisions.askPermission(asker(run), asked, withdraw);
      },
      askClarification: async (question, withdraw) => {
        if (this.#ending(run)) return { outcome: "cancelled" };
        this.#flushDelta(run);
        return this.deps.decisions.askClarification(asker(run), question, withdraw);
      },
      file: async (file) => {
        this.#flushDelta(run);
        await this.#deliver(run, file);
      },
    };
  }

  #ending(run: Run): boolean {
    return run.finished || run.cancelRequested || this.#closed;
  }

  /**
   * A file the agent produced: copied into the store (paths only from the
   * allowed roots) and broadcast as an outbound `attachment.added` carrying
   * the run's draft message ID. A refused or failed copy is logged; the run goes on.
   */
  async #deliver(run: Run, file: ProducedFile): Promise<AttachmentRow | undefined> {
    if (run.finished) return undefined;
    const { attachments, log } = this.deps;
    try {
      const row = await attachments.fromAgent(run.conversationId, run.messageId, file);
      if (!row) return undefined;
      run.files += 1;
      // A copy that outlived its run (cancel grace, shutdown) joins the final message directly.
      if (run.finalMessageId) {
        attachments.assignMessage(run.messageId, run.finalMessageId);
        row.message_id = run.finalMessageId;
      }
      this.#publish({
        type: "attachment.added",
        conversation_id: run.conversationId,
        attachment: attachments.descriptor(row),
        ts: this.#ts(),
      });
      return row;
    } catch (err) {
      log.warn({ run: run.runId, err: (err as Error).message }, "produced file could not be stored");
      return undefined;
    }
  }

  /**
   * Another event of the run follows what was streamed so far: the answer's waiting tail goes out
   * first, and the agent has moved on from its thought (`thought.complete`).
   */
  #flushDelta(run: Run): void {
    run.answer.flush();
    run.thoughts.end();
  }

  #tool(
    run: Run,
    toolCallId: string,
    toolName: string,
    status: ToolState["status"],
    extra: {
      args?: Record<string, unknown> | undefined;
      duration?: number | null;
      error?: string | undefined;
      /** Only the detail changed: the stored state is kept, and only `activity` peers are told. */
      detailOnly?: boolean;
    },
  ): void {
    const now = this.deps.clock.now();
    const tool = run.tools.get(toolCallId);
    const stored = extra.detailOnly ? this.deps.store.toolCall(run.conversationId, toolCallId) : undefined;
    const row: ToolRow = stored ?? {
      run_id: run.runId,
      tool_call_id: toolCallId,
      conversation_id: run.conversationId,
      tool_name: toolName,
      status,
      args_json: extra.args ? JSON.stringify(extra.args) : null,
      duration_ms: extra.duration ?? null,
      error: extra.error ?? null,
      ts: now,
    };
    const message: ServerMessage = { type: "tool.event", ...toolState(row) };
    let fields: Record<string, Record<string, unknown>> | undefined;
    if (tool?.detail) {
      const detail = boundDetail(message, tool.detail);
      row.detail_json = JSON.stringify(detail);
      // Content travels again only when it changed; the rest of the detail is small.
      const { content, ...rest } = detail;
      const sent = content === undefined ? undefined : JSON.stringify(content);
      const changed = sent !== undefined && sent !== tool.sentContent;
      if (changed) tool.sentContent = sent;
      if (extra.detailOnly && !changed && row.detail_json === stored?.detail_json) return;
      fields = { [FEATURE_ACTIVITY]: changed ? { ...rest, content } : rest };
    }
    this.deps.store.upsertTool(row);
    this.deps.outbox.publish({
      ...eventOf(message),
      ...(fields ? { fields } : {}),
      ...(extra.detailOnly ? { feature: FEATURE_ACTIVITY } : {}),
    });
  }

  /** End a run exactly once: close open tools, persist, message.complete, run.finished. */
  #finish(run: Run, result: TurnResult): void {
    if (run.finished) return;
    run.answer.stop();
    clearTimeout(run.graceTimer);
    // The turn ended: so did its thought, before the tools are closed and the answer completes.
    run.thoughts.end();
    // No question outlives its run: each pending one is withdrawn (approval.resolved / clarify.resolved, accepted false).
    this.deps.decisions.withdrawRun(run.runId);
    for (const [id, tool] of run.tools) {
      if (tool.status === "running") {
        this.#tool(run, id, tool.name, "cancelled", {
          duration: Math.round(performance.now() - tool.startedAt),
        });
      }
    }
    run.finished = true;
    const status: RunStatus = run.cancelRequested ? "cancelled" : validStatus(result);
    run.status = status;
    const reported = (result as { error?: unknown } | undefined)?.error;
    const error =
      status === "failed"
        ? truncate(typeof reported === "string" && reported ? reported : BACKEND_FAILED)
        : undefined;
    const { store, log } = this.deps;
    const now = this.deps.clock.now();
    try {
      // Recorded before message.complete goes out: a client that saw the final text must find it in
      // history after a crash (the commit's fsync is where a SIGKILL otherwise lands in between).
      // A partially streamed answer (cancel, failure) is recorded too, so history matches what the user saw.
      // Delivered files move from the draft to the recorded message in the same transaction.
      store.transaction(() => {
        const row = store.finishRun(
          run.runId,
          run.conversationId,
          status,
          now,
          error ?? null,
          run.text,
          run.files > 0,
        );
        if (row === null) return;
        run.finalMessageId = `m${row}`;
        this.deps.attachments.assignMessage(run.messageId, run.finalMessageId);
      });
    } catch (err) {
      log.error({ err, run: run.runId }, "could not record the end of a run");
    }
    this.#publish({
      type: "message.complete",
      conversation_id: run.conversationId,
      message_id: run.messageId,
      text: run.text,
      ts: iso(now),
    });
    this.#active.delete(run.conversationId);
    this.#publish(
      {
        type: "run.finished",
        conversation_id: run.conversationId,
        run_id: run.runId,
        status,
        ...(error === undefined ? {} : { error }),
      } satisfies ServerMessage,
      status === "cancelled" ? run.cancelOrigin : undefined,
    );
    log.debug(
      { run: run.runId, status, ...(this.deps.logChatContent && run.text ? { text: run.text } : {}) },
      "run finished",
    );
    this.#runFinished(run, status, error);
    run.resolveDone();
  }

  // ---- Run events (see RunEvent) -----------------------------------------------------------------

  readonly #listeners = new Set<RunListener>();
  /** Whether a client asked for each active run, by run ID, until its `finished` event. */
  readonly #byClient = new Map<string, boolean>();

  /**
   * Observe every run from `accepted` to `finished`; listeners are called in the order they were
   * added, synchronously, right after the run's own messages went out. Returns the unsubscribe.
   */
  onRun(listener: RunListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #runAccepted(run: Run, byClient: boolean): void {
    this.#byClient.set(run.runId, byClient);
    const { conversationId, runId, owner } = run;
    this.#emitRun({ type: "accepted", conversationId, runId, byClient, owner });
  }

  #runFinished(run: Run, status: RunStatus, error: string | undefined): void {
    const byClient = this.#byClient.get(run.runId) ?? false;
    this.#byClient.delete(run.runId);
    this.#emitRun({
      type: "finished",
      conversationId: run.conversationId,
      runId: run.runId,
      byClient,
      status,
      ...(error === undefined ? {} : { error }),
      text: run.text,
      shutdown: this.#closed,
    });
  }

  /** An observer that throws is logged; it never breaks the run or the other observers. */
  #emitRun(event: RunEvent): void {
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch (err) {
        this.deps.log.error({ err, run: event.runId, event: event.type }, "a run observer failed");
      }
    }
  }
}

function asker(run: Run): Asker {
  return {
    conversationId: run.conversationId,
    runId: run.runId,
    sessionKey: run.sessionKey,
    autoApprove: run.owner.autoApprove,
  };
}

function validStatus(result: TurnResult): RunStatus {
  const s = (result as { status?: unknown } | undefined)?.status;
  return s === "completed" || s === "cancelled" || s === "failed" ? s : "failed";
}

/**
 * Wire form of a stored tool state (`args_redacted` only while running, `error` only on failure);
 * with `activity`, its detail too.
 */
function toolState(row: ToolRow, activity = false): ToolState {
  const state = v1ToolState(row);
  if (!activity || !row.detail_json) return state;
  // Bounded again with this copy's own fields, as the event it was stored from was.
  return {
    ...state,
    ...boundDetail({ type: "tool.event", ...state }, JSON.parse(row.detail_json) as ToolDetail),
  };
}

function v1ToolState(row: ToolRow): ToolState {
  return {
    conversation_id: row.conversation_id,
    run_id: row.run_id,
    tool_call_id: row.tool_call_id,
    tool_name: row.tool_name,
    status: row.status,
    ...(row.status === "running"
      ? row.args_json
        ? { args_redacted: JSON.parse(row.args_json) as Record<string, unknown> }
        : {}
      : { duration_ms: row.duration_ms }),
    ...(row.status === "failed" && row.error !== null ? { error: row.error } : {}),
    ts: iso(row.ts),
  };
}
