/**
 * The ACP agent backend: drives any Agent Client Protocol agent (Hermes, Qwen
 * Code, Claude Code, Codex, Gemini CLI, …) spawned as a child process over stdio.
 * The mapping is documented in docs/agents.md.
 */
import * as acp from "@agentclientprotocol/sdk";
import type { ReasoningEffort } from "@pheby/protocol";
import { nearestChoice } from "../nearest.js";
import type {
  AgentBackend,
  AgentCapabilities,
  AgentCatalogue,
  AgentHistoryEntry,
  AgentHost,
  AgentSessionInfo,
  TurnInput,
  TurnResult,
  TurnSettings,
  TurnSink,
} from "../port.js";
import { type FoundFile, insideRoots, promptBlocks, stripMediaLines } from "./content.js";
import { mapElicitationForm } from "./elicitation.js";
import { mapPermissionOptions } from "./permissions.js";
import { AgentGoneError, AgentProcess, agentErrorText, errorMessage } from "./process.js";
import {
  catalogueOf,
  currentModelOf,
  effortStep,
  effortsOf,
  hasModels,
  hasReasoning,
  legacyModelsOf,
  modelStep,
  type SessionSettingsState,
  type SettingStep,
} from "./settings.js";
import { Turn } from "./turn.js";

/** Options of {@link createAcpBackend}. */
export interface AcpBackendOptions {
  /** The agent's argv, e.g. `["hermes", "acp"]` or `["qwen", "--acp"]`. */
  command: string[];
  /** Working directory of the agent process and of every session. Must be absolute. */
  cwd: string;
  /** Extra environment for the agent. `PHEBY_*` variables of this process are never inherited. */
  env?: Record<string, string>;
  /** Host directories the agent may deliver files from (`MEDIA:` lines, `file://` links). */
  allowedFileRoots: string[];
  /** Session mode to put new and resumed sessions in (e.g. `"default"` so Qwen Code asks permission). */
  mode?: string;
  /** A control request (session/new, set_config_option, …) unanswered this long means the agent hung. Default 30 s. */
  requestTimeoutMs?: number;
  /** How long the agent may take to answer `initialize` after spawning. Default 60 s (Python agents boot slowly). */
  startTimeoutMs?: number;
  /** After `session/cancel`, how long the turn may take to stop before the agent is killed. Default: `requestTimeoutMs`. */
  cancelTimeoutMs?: number;
  /** On close, how long the agent gets to exit before SIGKILL. Default 5 s. */
  shutdownTimeoutMs?: number;
  /** First respawn delay after a crash; doubles per consecutive crash, up to 30 s. Default 1 s. */
  respawnBackoffMs?: number;
  /** Output outside any turn is gathered this long before it is pushed as one message. Default 300 ms. */
  unsolicitedFlushMs?: number;
}

interface SessionState {
  id: string;
  settings: SessionSettingsState;
  modes: acp.SessionModeState | null;
  /** Serializes this session's updates in arrival order. */
  queue: Promise<void>;
  turn: Turn | null;
  /** Settles when {@link turn} has ended. */
  turnEnded: Promise<void>;
  /** Collects replayed messages while `session/load` runs. */
  replay: AgentHistoryEntry[] | null;
  replayMessageId: string | null;
  /** The process that has this session open (a new process must resume or load it first). */
  openIn: AgentProcess | null;
  unsolicited: { text: string; timer: NodeJS.Timeout } | null;
}

type SessionResponse = acp.NewSessionResponse | acp.LoadSessionResponse | acp.ResumeSessionResponse;

const MAX_BACKOFF_MS = 30_000;
const MAX_LIST_PAGES = 50;
const YOLO_MODE = /yolo|bypass/i;

class AcpBackend implements AgentBackend {
  readonly name = "acp";
  private host!: AgentHost;
  private proc: AgentProcess | null = null;
  private starting: Promise<AgentProcess> | null = null;
  private closed = false;
  private crashes = 0;
  private lastExitAt = 0;
  private readonly sessions = new Map<string, SessionState>();
  /** Settings of the latest fresh session: the agent's defaults, for the catalogue. */
  private fresh: SessionSettingsState | null = null;
  /**
   * The session opened to read the catalogue, until a conversation takes it. Hidden through the
   * host (persisted), so an agent that keeps sessions never shows it as an empty conversation.
   */
  private spare: SessionState | null = null;
  /** The efforts each model offered when a session used it (OpenCode's change with the model). */
  private readonly modelEfforts = new Map<string, ReasoningEffort[]>();
  private readonly requestTimeoutMs: number;

  constructor(private readonly options: AcpBackendOptions) {
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
  }

  /**
   * What the agent declared at `initialize`. Until the agent first runs, optimistic values
   * (everything ACP can do); call {@link ensureReady} for the real ones.
   */
  get capabilities(): AgentCapabilities {
    const caps = this.proc?.init.agentCapabilities ?? this.lastInit?.agentCapabilities;
    const known = this.lastInit !== null;
    return {
      listSessions: known ? Boolean(caps?.sessionCapabilities?.list) : true,
      loadHistory: known ? Boolean(caps?.loadSession) : true,
      deleteSession: known ? Boolean(caps?.sessionCapabilities?.delete) : true,
      models: this.fresh ? hasModels(this.fresh) : true,
      reasoning: this.fresh
        ? hasReasoning(this.fresh) || [...this.modelEfforts.values()].some((e) => e.length > 0)
        : true,
      images: known ? Boolean(caps?.promptCapabilities?.image) : true,
    };
  }

  private lastInit: acp.InitializeResponse | null = null;

  async start(host: AgentHost): Promise<void> {
    this.host = host;
  }

  /** Start the agent if needed so {@link capabilities} reflects what it declared. */
  async ensureReady(): Promise<void> {
    await this.process();
  }

  async createSession(_conversationId: string): Promise<{ sessionId: string }> {
    const spare = this.spare;
    this.spare = null;
    if (spare?.openIn?.alive) return { sessionId: spare.id };
    return { sessionId: (await this.newSession()).id };
  }

  private async newSession(): Promise<SessionState> {
    const proc = await this.process();
    const response = await proc.request<acp.NewSessionResponse>(
      "session/new",
      { cwd: this.options.cwd, mcpServers: [] },
      this.requestTimeoutMs,
    );
    const session = this.session(response.sessionId);
    await this.opened(proc, session, response);
    this.fresh = { ...session.settings };
    return session;
  }

  async prompt(input: TurnInput, sink: TurnSink, signal: AbortSignal): Promise<TurnResult> {
    if (signal.aborted) return { status: "cancelled" };
    const session = this.session(input.sessionId);
    // The server may report a cancelled run finished before the agent has stopped it (its cancel grace);
    // the next prompt then waits for the agent, which stops or is killed within cancelTimeoutMs.
    while (session.turn) {
      if (!session.turn.cancelled)
        return { status: "failed", error: "a turn is already running in this session" };
      await session.turnEnded;
    }
    if (signal.aborted) return { status: "cancelled" };
    // Only now: an agent killed for ignoring that cancel is respawned here.
    let proc: AgentProcess;
    try {
      proc = await this.process();
    } catch (err) {
      return { status: "failed", error: errorMessage(err) };
    }
    this.flushUnsolicited(session);
    const turn = new Turn(sink, (file) => this.deliver(sink, file));
    session.turn = turn;
    let ended!: () => void;
    session.turnEnded = new Promise((resolve) => (ended = resolve));
    try {
      const result = await this.runTurn(proc, session, turn, input, signal);
      await this.drain(session);
      await turn.finish(result);
      return result;
    } finally {
      session.turn = null;
      ended();
    }
  }

  private async runTurn(
    proc: AgentProcess,
    session: SessionState,
    turn: Turn,
    input: TurnInput,
    signal: AbortSignal,
  ): Promise<TurnResult> {
    let cancelTimer: NodeJS.Timeout | undefined;
    const onAbort = () => {
      turn.cancelled = true;
      turn.withdrawAll();
      proc.notify("session/cancel", { sessionId: session.id });
      const ms = this.options.cancelTimeoutMs ?? this.requestTimeoutMs;
      cancelTimer = setTimeout(() => proc.kill(`the agent did not stop within ${ms} ms of a cancel`), ms);
    };
    try {
      await this.open(proc, session);
      await this.applySettings(proc, session, input.settings, turn.sink);
      if (signal.aborted) return { status: "cancelled" };
      const prompt = await promptBlocks(
        input.text,
        input.attachments,
        proc.init.agentCapabilities?.promptCapabilities,
      );
      signal.addEventListener("abort", onAbort, { once: true });
      const response = await proc.request<acp.PromptResponse>(
        "session/prompt",
        { sessionId: session.id, prompt },
        null,
      );
      if (turn.cancelled) return { status: "cancelled" };
      this.crashes = 0;
      return stopResult(response.stopReason);
    } catch (err) {
      if (turn.cancelled || signal.aborted) return { status: "cancelled" };
      if (err instanceof acp.RequestError)
        return { status: "failed", error: `the agent reported an error: ${agentErrorText(err)}` };
      return { status: "failed", error: errorMessage(err) };
    } finally {
      signal.removeEventListener("abort", onAbort);
      clearTimeout(cancelTimer);
    }
  }

  async listSessions(): Promise<AgentSessionInfo[]> {
    const proc = await this.process();
    if (!proc.init.agentCapabilities?.sessionCapabilities?.list) return [];
    const out: AgentSessionInfo[] = [];
    let cursor: string | null | undefined;
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const response = await proc.request<acp.ListSessionsResponse>(
        "session/list",
        { cwd: this.options.cwd, ...(cursor ? { cursor } : {}) },
        this.requestTimeoutMs,
      );
      for (const s of response.sessions) {
        if (s.sessionId === this.spare?.id) continue;
        out.push({ sessionId: s.sessionId, title: s.title ?? null, updatedAt: s.updatedAt ?? null });
      }
      cursor = response.nextCursor;
      if (!cursor) break;
    }
    return out;
  }

  async loadHistory(sessionId: string): Promise<AgentHistoryEntry[]> {
    const proc = await this.process();
    if (!proc.init.agentCapabilities?.loadSession)
      throw new Error("the agent cannot replay history (no session/load)");
    const session = this.session(sessionId);
    // A replay would interleave with the live turn's updates.
    if (session.turn) throw new Error("the session has a running turn");
    return this.load(proc, session);
  }

  async deleteSession(sessionId: string): Promise<void> {
    const proc = await this.process();
    const caps = proc.init.agentCapabilities?.sessionCapabilities;
    if (!caps?.delete && !caps?.close) throw new Error("the agent cannot close or delete sessions");
    if (caps.close) await proc.request("session/close", { sessionId }, this.requestTimeoutMs);
    if (caps.delete) await proc.request("session/delete", { sessionId }, this.requestTimeoutMs);
    const session = this.sessions.get(sessionId);
    if (session?.unsolicited) clearTimeout(session.unsolicited.timer);
    this.sessions.delete(sessionId);
  }

  async catalogue(): Promise<AgentCatalogue> {
    const proc = await this.process();
    if (!this.fresh) {
      // Models are per session in ACP: open one to learn the agent's defaults. It is kept for
      // the next conversation rather than left behind empty, and hidden until then.
      const spare = await this.newSession();
      this.host.hideSession(spare.id);
      this.spare = spare;
    }
    return catalogueOf(
      this.fresh ?? { configOptions: [], legacyModels: null },
      proc.agentName,
      this.modelEfforts,
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const s of this.sessions.values()) if (s.unsolicited) clearTimeout(s.unsolicited.timer);
    const proc = this.proc ?? (await this.starting?.catch(() => null));
    await proc?.shutdown(this.options.shutdownTimeoutMs ?? 5_000);
  }

  // ---- process lifecycle -------------------------------------------------------------------

  /** The live agent process, spawned on first need and respawned (with backoff) after a crash. */
  private process(): Promise<AgentProcess> {
    if (this.closed) return Promise.reject(new AgentGoneError("the agent backend is closed"));
    if (this.proc?.alive) return Promise.resolve(this.proc);
    this.starting ??= this.spawn().finally(() => {
      this.starting = null;
    });
    return this.starting;
  }

  private async spawn(): Promise<AgentProcess> {
    if (this.crashes > 0) {
      const backoff = Math.min(
        (this.options.respawnBackoffMs ?? 1_000) * 2 ** (this.crashes - 1),
        MAX_BACKOFF_MS,
      );
      const wait = this.lastExitAt + backoff - Date.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    }
    const env: NodeJS.ProcessEnv = {};
    // Pheby's own settings (the shared secret among them) are not the agent's business.
    for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("PHEBY_")) env[k] = v;
    Object.assign(env, this.options.env);
    let proc: AgentProcess;
    try {
      proc = await AgentProcess.start(
        {
          command: this.options.command,
          cwd: this.options.cwd,
          env,
          startTimeoutMs: this.options.startTimeoutMs ?? 60_000,
        },
        {
          update: (n) => this.enqueue(n),
          permission: (p, s) => this.permission(p, s),
          elicitation: (p, s) => this.elicitation(p, s),
        },
        this.host.log,
      );
    } catch (err) {
      this.crashes++;
      this.lastExitAt = Date.now();
      this.host.log.warn({ err: errorMessage(err) }, "agent failed to start");
      throw err;
    }
    this.proc = proc;
    this.lastInit = proc.init;
    void proc.exited.then((reason) => this.exited(proc, reason));
    return proc;
  }

  private exited(proc: AgentProcess, reason: string): void {
    if (this.proc === proc) this.proc = null;
    if (this.closed) return;
    this.crashes++;
    this.lastExitAt = Date.now();
    this.host.log.warn({ reason }, "agent process exited");
    for (const s of this.sessions.values()) if (s.openIn === proc) s.turn?.withdrawAll();
  }

  // ---- sessions ----------------------------------------------------------------------------

  private session(id: string): SessionState {
    let s = this.sessions.get(id);
    if (!s) {
      s = {
        id,
        settings: { configOptions: [], legacyModels: null },
        modes: null,
        queue: Promise.resolve(),
        turn: null,
        turnEnded: Promise.resolve(),
        replay: null,
        replayMessageId: null,
        openIn: null,
        unsolicited: null,
      };
      this.sessions.set(id, s);
    }
    return s;
  }

  /** Make sure `proc` has the session open: resume it (or load it) when this process has not seen it. */
  private async open(proc: AgentProcess, session: SessionState): Promise<void> {
    if (session.openIn === proc) return;
    const caps = proc.init.agentCapabilities;
    if (caps?.sessionCapabilities?.resume) {
      const response = await proc.request<acp.ResumeSessionResponse>(
        "session/resume",
        { sessionId: session.id, cwd: this.options.cwd, mcpServers: [] },
        this.requestTimeoutMs,
      );
      await this.opened(proc, session, response);
    } else if (caps?.loadSession) {
      await this.load(proc, session);
    } else {
      throw new Error(
        "the agent cannot reopen this conversation after a restart (no session/resume or session/load)",
      );
    }
  }

  /** `session/load`: collect the replayed messages instead of treating them as live output. */
  private async load(proc: AgentProcess, session: SessionState): Promise<AgentHistoryEntry[]> {
    await this.drain(session);
    session.replay = [];
    session.replayMessageId = null;
    try {
      const response = await proc.request<acp.LoadSessionResponse | null>(
        "session/load",
        { sessionId: session.id, cwd: this.options.cwd, mcpServers: [] },
        this.requestTimeoutMs,
      );
      await this.drain(session);
      await this.opened(proc, session, response ?? {});
      return session.replay
        .map((e) => (e.role === "assistant" ? { ...e, text: stripMediaLines(e.text) } : e))
        .filter((e) => e.text.trim().length > 0);
    } finally {
      session.replay = null;
    }
  }

  /** Record what a session/new|load|resume response said, and put the session in the configured mode. */
  private async opened(proc: AgentProcess, session: SessionState, response: SessionResponse): Promise<void> {
    session.openIn = proc;
    this.setSettings(session, {
      configOptions: response.configOptions ?? [],
      legacyModels: legacyModelsOf(response),
    });
    session.modes = response.modes ?? null;
    const mode = this.options.mode;
    if (mode) await this.setMode(proc, session, mode);
  }

  private async setMode(proc: AgentProcess, session: SessionState, modeId: string): Promise<void> {
    const modes = session.modes;
    if (!modes || modes.currentModeId === modeId || !modes.availableModes.some((m) => m.id === modeId))
      return;
    try {
      await proc.request("session/set_mode", { sessionId: session.id, modeId }, this.requestTimeoutMs);
      modes.currentModeId = modeId;
    } catch (err) {
      if (err instanceof AgentGoneError) throw err;
      this.host.log.warn({ err: errorMessage(err), modeId }, "agent refused a mode change");
    }
  }

  /** Record what the agent says a session's settings are, and what its model offers. */
  private setSettings(session: SessionState, state: SessionSettingsState): void {
    session.settings = state;
    const model = currentModelOf(state);
    if (model) this.modelEfforts.set(model, effortsOf(state).efforts);
  }

  /**
   * Apply YOLO mode, model and effort before a prompt; only what differs is sent. The effort is
   * judged after the model is switched (it may appear, vanish or change values with the model);
   * a setting the agent does not offer is dropped and the user told in a notice.
   */
  private async applySettings(
    proc: AgentProcess,
    session: SessionState,
    settings: TurnSettings,
    sink: TurnSink,
  ): Promise<void> {
    const modes = session.modes;
    const yoloMode = modes?.availableModes.find((m) => YOLO_MODE.test(m.id))?.id;
    if (yoloMode && settings.yolo) await this.setMode(proc, session, yoloMode);
    else if (yoloMode && modes?.currentModeId === yoloMode) {
      const back = this.options.mode ?? modes.availableModes.find((m) => m.id !== yoloMode)?.id;
      if (back) await this.setMode(proc, session, back);
    }
    await this.applyStep(proc, session, modelStep(session.settings, settings.model), sink);
    await this.applyStep(proc, session, effortStep(session.settings, settings.effort), sink);
  }

  private async applyStep(
    proc: AgentProcess,
    session: SessionState,
    step: SettingStep,
    sink: TurnSink,
  ): Promise<void> {
    if (step.unavailable) {
      sink.notice(`Setting skipped: ${step.unavailable}; this turn uses the agent's current setting.`);
      return;
    }
    const change = step.change;
    if (!change) return;
    try {
      if (change.kind === "config") {
        const response = await proc.request<acp.SetSessionConfigOptionResponse>(
          "session/set_config_option",
          { sessionId: session.id, configId: change.configId, value: change.value },
          this.requestTimeoutMs,
        );
        // The response is the whole new state; updates queued before it say the same or less.
        await this.drain(session);
        if (response.configOptions) {
          this.setSettings(session, { ...session.settings, configOptions: response.configOptions });
        }
      } else {
        await proc.request(
          "session/set_model",
          { sessionId: session.id, modelId: change.modelId },
          this.requestTimeoutMs,
        );
        const legacy = session.settings.legacyModels;
        if (legacy)
          this.setSettings(session, {
            ...session.settings,
            legacyModels: { ...legacy, currentModelId: change.modelId },
          });
      }
    } catch (err) {
      if (!(err instanceof acp.RequestError)) throw err;
      const what =
        change.kind === "config" ? `${change.configId} ${change.value}` : `model ${change.modelId}`;
      sink.notice(`Setting skipped: the agent refused ${what} (${agentErrorText(err)}).`);
    }
  }

  // ---- agent → client ----------------------------------------------------------------------

  /** Queue an update behind the session's earlier ones (the SDK dispatches handlers concurrently). */
  private enqueue(n: acp.SessionNotification): void {
    const session = this.session(n.sessionId);
    session.queue = session.queue
      .then(() => this.apply(session, n.update))
      .catch((err) => this.host.log.error({ err: errorMessage(err) }, "failed to apply an agent update"));
  }

  /** Wait until every queued update of the session has been applied. */
  private async drain(session: SessionState): Promise<void> {
    let last: Promise<void> | undefined;
    while (last !== session.queue) {
      last = session.queue;
      await last;
    }
  }

  private async apply(session: SessionState, update: acp.SessionUpdate): Promise<void> {
    if (session.replay) return this.replayed(session, update);
    const turn = session.turn;
    switch (update.sessionUpdate) {
      case "agent_message_chunk":
        if (turn) await turn.message(update.content);
        else if (update.content.type === "text") this.unsolicited(session, update.content.text);
        return;
      case "tool_call":
      case "tool_call_update":
        turn?.tool(update);
        return;
      case "session_info_update":
        if (typeof update.title === "string" && update.title.trim())
          this.host.sessionTitle(session.id, update.title.trim());
        return;
      case "config_option_update":
        this.setSettings(session, { ...session.settings, configOptions: update.configOptions });
        return;
      case "current_mode_update":
        if (session.modes) session.modes.currentModeId = update.currentModeId;
        return;
      case "notice": {
        const text = [update.title, update.description].filter(Boolean).join(": ");
        if (turn) turn.sink.notice(text);
        else this.host.unsolicited({ sessionId: session.id, text, kind: "notice" });
        return;
      }
      default:
        // Thoughts, plans, usage, commands: not part of Pheby's answer text.
        return;
    }
  }

  private replayed(session: SessionState, update: acp.SessionUpdate): void {
    if (update.sessionUpdate !== "user_message_chunk" && update.sessionUpdate !== "agent_message_chunk")
      return;
    if (update.content.type !== "text") return;
    const role = update.sessionUpdate === "user_message_chunk" ? "user" : "assistant";
    const entries = session.replay!;
    const last = entries[entries.length - 1];
    const messageId = update.messageId ?? null;
    if (last && last.role === role && messageId === session.replayMessageId) last.text += update.content.text;
    else entries.push({ role, text: update.content.text });
    session.replayMessageId = messageId;
  }

  /** Output outside any turn: gather briefly, then push as one message. */
  private unsolicited(session: SessionState, text: string): void {
    if (session.unsolicited) {
      session.unsolicited.text += text;
      return;
    }
    const timer = setTimeout(() => this.flushUnsolicited(session), this.options.unsolicitedFlushMs ?? 300);
    session.unsolicited = { text, timer };
  }

  private flushUnsolicited(session: SessionState): void {
    const pending = session.unsolicited;
    if (!pending) return;
    clearTimeout(pending.timer);
    session.unsolicited = null;
    const text = stripMediaLines(pending.text);
    if (text.trim()) this.host.unsolicited({ sessionId: session.id, text });
  }

  /** Store a file the agent produced; host paths only from the allowed roots. */
  private async deliver(sink: TurnSink, file: FoundFile): Promise<void> {
    if (file.source === "bytes") return sink.file(file);
    const real = await insideRoots(file.path, this.options.allowedFileRoots);
    if (!real) {
      this.host.log.warn({ path: file.path }, "refused an agent file outside the allowed roots");
      return;
    }
    await sink.file({ ...file, path: real });
  }

  private async permission(
    params: acp.RequestPermissionRequest,
    signal: AbortSignal,
  ): Promise<acp.RequestPermissionResponse> {
    const session = this.sessions.get(params.sessionId);
    const cancelled: acp.RequestPermissionResponse = { outcome: { outcome: "cancelled" } };
    if (!session?.turn) return cancelled;
    await this.drain(session); // the tool call it is about is shown first
    const turn = session.turn;
    const { choices, optionFor } = mapPermissionOptions(params.options);
    if (!turn || choices.length === 0) return cancelled;
    const call = params.toolCall;
    const input = (call.rawInput ?? {}) as { command?: unknown; description?: unknown };
    const answer = await turn.ask(signal, (withdraw) =>
      turn.sink.askPermission(
        {
          toolCallId: call.toolCallId,
          command: typeof input.command === "string" ? input.command : (call.title ?? call.toolCallId),
          description:
            typeof input.description === "string" ? input.description : (call.title ?? call.kind ?? ""),
          choices,
        },
        withdraw,
      ),
    );
    // The user may pick a choice the agent does not offer: apply the nearest one it does.
    const applied = answer.outcome === "selected" ? nearestChoice(answer.choice, choices) : undefined;
    const optionId = applied && optionFor.get(applied);
    return optionId ? { outcome: { outcome: "selected", optionId } } : cancelled;
  }

  private async elicitation(
    params: acp.CreateElicitationRequest,
    signal: AbortSignal,
  ): Promise<acp.CreateElicitationResponse> {
    const sessionId =
      "sessionId" in params && typeof params.sessionId === "string" ? params.sessionId : undefined;
    const session = sessionId ? this.sessions.get(sessionId) : undefined;
    const schema = "requestedSchema" in params ? (params.requestedSchema as acp.ElicitationSchema) : null;
    const form = params.mode === "form" && schema ? mapElicitationForm(params.message, schema) : null;
    if (!session?.turn || !form) return { action: "decline" };
    await this.drain(session);
    const turn = session.turn;
    if (!turn) return { action: "cancel" };
    const answer = await turn.ask(signal, (withdraw) => turn.sink.askClarification(form.question, withdraw));
    return form.toResponse(answer);
  }
}

function stopResult(reason: acp.StopReason): TurnResult {
  switch (reason) {
    case "end_turn":
    case "max_tokens":
    case "max_turn_requests":
      return { status: "completed" };
    case "cancelled":
      return { status: "cancelled" };
    case "refusal":
      return { status: "failed", error: "the agent refused to continue" };
    default:
      return { status: "failed", error: `the agent stopped for an unknown reason (${String(reason)})` };
  }
}

/** Create the ACP backend. The agent is spawned on first need, not here. */
export function createAcpBackend(
  options: AcpBackendOptions,
): AgentBackend & Required<Pick<AgentBackend, "ensureReady">> {
  return new AcpBackend(options);
}
