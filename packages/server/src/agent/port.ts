/**
 * The agent backend port: the one seam between the Pheby server and an agent.
 *
 * A backend knows nothing of WebSockets or Pheby JSON. The server owns run IDs,
 * the run state machine, cumulative text, approval/clarify IDs and pending
 * state, YOLO, conversation names, the transcript mirror, settings persistence
 * and attachment storage. A backend only drives the agent and reports what
 * happens through the {@link TurnSink} and {@link AgentHost} callbacks.
 */
import type {
  ApprovalChoice,
  AttachmentKind,
  ContextUsage,
  PlanEntry,
  ReasoningEffort,
  ToolContentBlock,
} from "@pheby/protocol";
import type { ToolDetail } from "../activity/tool-detail.js";

export type { ToolDetail };

/** What a backend can do; the server answers the rest with `not_implemented` or its own fallback. */
export interface AgentCapabilities {
  /** The agent can list its own sessions (merged with the server's index). */
  listSessions: boolean;
  /** The agent can replay a session's history (used to refresh the transcript mirror). */
  loadHistory: boolean;
  /** The agent can delete a session. */
  deleteSession: boolean;
  /** The agent exposes a model catalogue and accepts model changes. */
  models: boolean;
  /** The agent accepts reasoning-effort changes. */
  reasoning: boolean;
  /** The agent accepts image attachments as content. */
  images: boolean;
}

/** Where a session works: its conversation's working directory (ACP `cwd`). */
export interface SessionOptions {
  /** Absolute; absent: the backend's own directory ({@link AgentBackend.cwd}). */
  cwd?: string;
}

/** A session as the agent lists it. */
export interface AgentSessionInfo {
  sessionId: string;
  /** The directory it works in, when the agent says (the `cwd` it was listed under). */
  cwd?: string;
  title?: string | null;
  /** ISO-8601 timestamp of the last activity, if known. */
  updatedAt?: string | null;
}

/** One replayed history entry. */
export interface AgentHistoryEntry {
  role: "user" | "assistant";
  text: string;
  ts?: string | null;
}

/** A model provider in the backend's catalogue. */
export interface AgentModelProvider {
  slug: string;
  name: string;
  models: string[];
}

/** The backend's model and reasoning catalogue. Nothing here is hard-coded in the server. */
export interface AgentCatalogue {
  providers: AgentModelProvider[];
  /** The agent's own default, used when neither a global nor a conversation override is set. */
  defaultModel: { model: string; provider: string | null } | null;
  /** Reasoning levels the agent accepts (`none` disables thinking). */
  reasoningEfforts: ReasoningEffort[];
  /** The agent's default effort; null means the provider default. */
  defaultEffort: ReasoningEffort | null;
  /**
   * Efforts per model ID, for agents whose efforts depend on the model (a model absent here is
   * not known yet: `reasoningEfforts` applies). An empty list: the model takes no effort.
   */
  modelEfforts?: Record<string, ReasoningEffort[]>;
}

/** Effective settings for one turn, resolved by the server (conversation override, else global, else agent default). */
export interface TurnSettings {
  model: { model: string; provider: string | null } | null;
  effort: ReasoningEffort | null;
  /** YOLO is on for this conversation (the server auto-answers permissions; a backend may also switch an agent mode). */
  yolo: boolean;
  /**
   * The agent mode the turn runs in, resolved by the server (YOLO's mode, else the conversation's
   * chosen one, else the agent's configured or default one; never one that approves without asking
   * when {@link asking}). Null or absent: the server knows no mode; the backend keeps the session's.
   */
  mode?: string | null;
  /**
   * Nobody started the turn from a client and its schedule does not allow auto-approval: the
   * session must not run in a mode that approves without asking (`autoApproves` in agent/modes.ts).
   */
  asking?: boolean;
}

/** One mode an agent session offers. */
export interface AgentModeInfo {
  id: string;
  name: string;
  description: string | null;
}

/** The modes an agent session offers, and the one it is in. */
export interface AgentModes {
  available: AgentModeInfo[];
  currentModeId: string | null;
  /**
   * The mode a session opens in when Pheby chose none: the agent entry's configured mode, else the
   * agent's own default (absent: `currentModeId`, which after a restart may be a mode Pheby chose).
   */
  defaultModeId?: string | null;
}

/** One slash command an agent session accepts (sent as a message starting with `/name`). */
export interface AgentCommandInfo {
  /** Without the slash. */
  name: string;
  description: string;
  /** The agent's hint for the text after the name; null when it takes none. */
  hint: string | null;
}

/** How {@link AgentBackend.setMode} went. */
export type SetModeResult =
  /** The open session is in the mode now. */
  | { outcome: "applied" }
  /** The session is not open (in a live agent process): the mode applies with its next turn. */
  | { outcome: "closed" }
  /** The agent refused; `reason` is its words, fit for a client (host paths scrubbed). */
  | { outcome: "refused"; reason: string };

/** A stored attachment handed to the agent with a prompt. */
export interface AttachmentRef {
  attachmentId: string;
  filename: string;
  mimeType: string;
  size: number;
  kind: AttachmentKind;
  /** Absolute path of the blob in the server's store (the agent runs on the same host). */
  path: string;
  /** UTF-8 content, for text files up to 100 KiB; the backend inlines it into the turn. */
  inlineText?: string;
}

/** The end of Pheby's own transcript of a conversation: its newest messages within a budget (see {@link TurnInput.history}). */
export interface TranscriptTail {
  /** Oldest first. */
  entries: AgentHistoryEntry[];
  /** Earlier messages exist that are not in `entries`. */
  more: boolean;
}

/** Input of one turn. */
export interface TurnInput {
  conversationId: string;
  /** The agent session ID the server stored for the conversation. */
  sessionId: string;
  /**
   * The conversation's working directory (its workspace's path, or its worktree's): the session
   * opens there (ACP `cwd` of session/resume, session/load, and of a replacement session), and
   * paths shown to clients are relative to its path base. Absent: the backend's own directory.
   */
  cwd?: string;
  text: string;
  attachments: AttachmentRef[];
  settings: TurnSettings;
  /**
   * Set on a turn the backend itself asked for ({@link AgentHost.wake}): the `meta` it passed,
   * handed back unchanged (e.g. the receipts of Hermes's background notifications).
   */
  meta?: Record<string, unknown>;
  /**
   * The conversation so far, before this turn's message, from the server's transcript: the newest
   * messages whose text totals at most `maxBytes` (UTF-8), always at least one when there is any. A
   * backend that must continue the conversation in a new agent session (the old one cannot be
   * reopened) gives it to the agent as context. Read on demand; absent in tests and older servers.
   */
  history?(maxBytes: number): TranscriptTail;
}

/** How a turn ended. */
export type TurnResult =
  | { status: "completed" }
  | { status: "cancelled" }
  | { status: "failed"; error: string };

/** A permission question. `choices` lists only the choices the agent can honour. */
export interface PermissionQuestion {
  toolCallId?: string;
  /**
   * What the question is about, as the `activity` extension shows it (an edit's diff, the command, a
   * plan's text), built like {@link ToolDetail}'s content. Absent: the server shows the content last
   * reported for `toolCallId`, if any.
   */
  preview?: ToolContentBlock[];
  command: string;
  description: string;
  choices: ApprovalChoice[];
  /**
   * The agent gives up on the question after this many ms (Hermes denies an approval after 60 s).
   * The server then withdraws it and tells the conversation it expired (the `expiry` extension).
   */
  expiresInMs?: number;
}

/**
 * The answer to a permission question. `cancelled`: the run ended or was cancelled first.
 * `choice` is any of the four spec choices, whatever the question offered: the user may pick one the
 * agent lacks, and the backend then applies the nearest one its agent offers ({@link nearestChoice}
 * in `@pheby/server`; the table is in docs/protocol.md).
 */
export type PermissionAnswer =
  | { outcome: "selected"; choice: ApprovalChoice; reason?: string }
  | { outcome: "cancelled"; expired?: boolean };

/** A clarification question. `choices: null` means free text only. */
export interface ClarifyQuestion {
  question: string;
  choices: string[] | null;
  allowFreeText: boolean;
  /** As {@link PermissionQuestion.expiresInMs}. */
  expiresInMs?: number;
}

/**
 * The answer to a clarification. `response` is one of the question's choices or the user's own
 * text — even for a question with `allowFreeText: false` (clients always offer "Other"). A backend
 * whose agent can only take a choice passes the text through its own "other" field where it has one,
 * else declines the question.
 */
export type ClarifyAnswer =
  | { outcome: "answered"; response: string }
  | { outcome: "cancelled"; expired?: boolean };

/** A file the agent produced: a path on the host (copied only from allowed roots) or bytes. */
export type ProducedFile =
  | { source: "path"; path: string; filename?: string; mimeType?: string }
  | { source: "bytes"; bytes: Uint8Array; filename: string; mimeType: string };

/** Callbacks a backend reports through while a turn runs. */
export interface TurnSink {
  /** Append a chunk of answer text (the server keeps the cumulative text). */
  text(chunk: string): void;
  /**
   * Append a chunk of the agent's thinking (ACP `agent_thought_chunk`). The server groups chunks into
   * thoughts: one ends when the agent moves on (answer text, a tool call, a question, a file, a
   * notice, the end of the turn), and the next chunk starts another. Never part of the answer.
   */
  thought(chunk: string): void;
  /**
   * The agent's plan, whole (ACP `plan`): it replaces the previous one. The server bounds it (100
   * entries of 2,000 characters) and keeps the latest per conversation.
   */
  plan(entries: PlanEntry[]): void;
  /**
   * The agent's context usage (ACP `usage_update`): tokens in context, the window, and the cost of the
   * agent session so far as the agent reports it (null when it does not).
   */
  usage(usage: ContextUsage): void;
  /**
   * A tool call started (or was first seen). `args` is redacted by the server. `detail` is what the
   * `activity` extension shows of it (build it with `ToolDetailBuilder`: paths placed, text scrubbed
   * and redacted, bounded); only `activity` connections see it.
   */
  toolStart(call: {
    toolCallId: string;
    toolName: string;
    args?: Record<string, unknown>;
    detail?: ToolDetail;
  }): void;
  /** A tool call ended. `duration_ms` is measured by the server. `detail` as for {@link toolStart}. */
  toolEnd(call: {
    toolCallId: string;
    status: "completed" | "failed" | "cancelled";
    error?: string;
    detail?: ToolDetail;
  }): void;
  /**
   * A running tool call's detail changed and nothing else did (its content arrived, a diff grew):
   * only `activity` connections are told. Optional for backends that report no detail.
   */
  toolDetail?(call: { toolCallId: string; detail: ToolDetail }): void;
  /**
   * Ask the user a permission question. Resolves once with the answer.
   * Aborting `withdraw` withdraws the question (agent timeout or cancellation);
   * the promise then resolves `{ outcome: "cancelled" }`.
   */
  askPermission(question: PermissionQuestion, withdraw?: AbortSignal): Promise<PermissionAnswer>;
  /** Ask the user a clarification. Same withdrawal rules as {@link askPermission}. */
  askClarification(question: ClarifyQuestion, withdraw?: AbortSignal): Promise<ClarifyAnswer>;
  /** The agent produced a file. Resolves when it is stored (or refused). */
  file(file: ProducedFile): Promise<void>;
  /** A lifecycle/status notice (`message.complete` with `kind: "notice"`). */
  notice(text: string): void;
  /**
   * The conversation continues in a new agent session, `sessionId` (its old one was lost: the agent
   * restarted without a way to reopen it, forgot it, or hangs in it). The server maps the
   * conversation to it for every later turn and never imports the old one as a conversation.
   */
  sessionReplaced(sessionId: string): void;
}

/** Output the agent sends outside any turn (scheduled deliveries, background completions). */
export interface UnsolicitedMessage {
  sessionId: string;
  text: string;
  kind?: "notice";
}

/** An ACP `mcpServers` entry of a stdio MCP server: how the agent launches it. */
export interface McpServerStdioSpec {
  name: string;
  command: string;
  args: string[];
  env: Array<{ name: string; value: string }>;
}

/** An ACP `mcpServers` entry of an HTTP MCP server (for agents that declare `mcpCapabilities.http`). */
export interface McpServerHttpSpec {
  type: "http";
  name: string;
  url: string;
  headers: Array<{ name: string; value: string }>;
}

/** An ACP `mcpServers` entry. */
export type McpServerSpec = McpServerStdioSpec | McpServerHttpSpec;

/** One agent process that may call Pheby's tools, and how its calls map to sessions. */
export interface ToolCaller {
  /** The agent's name (ACP `agentInfo.name`), for logs. */
  agent?: string;
  /** The agent's own timeout of one MCP tool call, when known: a question must expire before it. */
  toolTimeoutMs?: number;
  /** The session a tool call comes from, or null when it cannot be told (e.g. outside any turn). */
  sessionOf(call: { tool: string; args: Record<string, unknown> }): Promise<string | null>;
}

/** Pheby's own tools for agents (its MCP server: ask the user, schedules, notify, send a file). */
export interface AgentTools {
  /** The tool names offered. */
  readonly names: readonly string[];
  /**
   * Let one agent process call them: the `mcpServers` entries to hand it in its session requests
   * (both carrying one token of its own): `http` for an agent that declares ACP
   * `mcpCapabilities.http`, `stdio` (a small relay it launches) for the others; and `revoke` for
   * when the process is gone.
   */
  grant(caller: ToolCaller): { stdio: McpServerStdioSpec; http: McpServerHttpSpec; revoke(): void };
  /**
   * Call one of them from inside the server process (the simulator), in the conversation of
   * `sessionId`: the same checks and the same code as a call through the MCP server. Resolves
   * with the tool's result text; a refusal comes back as `{ isError: true }`.
   */
  call(
    sessionId: string,
    tool: string,
    args: Record<string, unknown>,
  ): Promise<{ text: string; isError?: boolean }>;
}

/** Server callbacks available to a backend for its whole life. */
export interface AgentHost {
  /** Push output that arrived outside any turn. */
  unsolicited(message: UnsolicitedMessage): void;
  /**
   * The agent asked to be prompted with `text` (a background completion it reports while idle):
   * the server runs it as a turn nobody on the socket asked for, handing `meta` back in
   * {@link TurnInput.meta}.
   */
  wake?(message: { sessionId: string; text: string; meta?: Record<string, unknown> }): void;
  /** Pheby's tools, when the operator offers them to agents (default); absent otherwise. */
  tools?: AgentTools;
  /** The agent's plan of a session outside any turn (see {@link TurnSink.plan}); `run_id` is then null. */
  plan?(sessionId: string, entries: PlanEntry[]): void;
  /** The agent's context usage of a session outside any turn (see {@link TurnSink.usage}). */
  usage?(sessionId: string, usage: ContextUsage): void;
  /** The agent changed a session's title. */
  sessionTitle(sessionId: string, title: string): void;
  /**
   * The agent's process changed state, for backends that run one (the `workspaces` extension's agent
   * status): `starting` (spawning), `ready` (up and initialized), `failed` (could not start), `idle`
   * (it exited; it is spawned again on next need).
   */
  agentStatus?(status: "idle" | "starting" | "ready" | "failed"): void;
  /**
   * The modes a session offers and the one it is in, when the session opens (after the configured
   * mode was applied) or its list changes. Not called when Pheby itself switched the mode.
   */
  sessionModes?(sessionId: string, modes: AgentModes): void;
  /**
   * The agent switched a session's mode by itself (ACP `current_mode_update`, e.g. leaving plan mode
   * once the user accepted the plan): it becomes the conversation's mode.
   */
  modeChanged?(sessionId: string, modeId: string): void;
  /** The agent announced the slash commands of a session (often right after it opened, outside any turn). */
  sessionCommands?(sessionId: string, commands: AgentCommandInfo[]): void;
  /** The agent compacted a session's context (ACP `compaction_update`, e.g. after `/compact`). */
  compacted?(sessionId: string): void;
  /**
   * Never import this agent session as a conversation, across restarts too: the backend opened
   * it for itself (the ACP catalogue probe). It may still become a conversation's session.
   */
  hideSession(sessionId: string): void;
  /**
   * The server's own directories (its data directory, its working directory), so a backend can keep
   * them out of the agent text it passes on (see `HostPaths`). Absent: the backend knows only its own.
   */
  serverPaths?: {
    dataDir: string;
    workdir: string;
    /**
     * The directories this agent works in (its workspaces, and where worktrees go): roots of the
     * files it may deliver, and working directories to scrub from text.
     */
    workspaces?: readonly string[];
  };
  /**
   * The operator allows chat text in the logs (`logChatContent`). Off or absent: what may carry it
   * (e.g. an agent's stderr) is logged as a length only.
   */
  logChatContent?: boolean;
  /** Structured logger (pino-compatible subset). Never log chat text here unless `logChatContent`. */
  log: {
    debug(obj: object, msg?: string): void;
    info(obj: object, msg?: string): void;
    warn(obj: object, msg?: string): void;
    error(obj: object, msg?: string): void;
  };
}

/** An agent backend. */
export interface AgentBackend {
  /** Short name reported as a conversation's `source`, e.g. "simulator", "acp". */
  readonly name: string;
  /**
   * The backend's own working directory (the ACP agent's `cwd`): the default workspace's path of a
   * server configured without workspaces. Absent: the server's working directory.
   */
  readonly cwd?: string;
  readonly capabilities: AgentCapabilities;
  /** Called once before any other method. */
  start(host: AgentHost): Promise<void>;
  /**
   * Bring the agent up if the backend starts it lazily, so that `capabilities` reflects what
   * the agent declared rather than optimistic defaults. Backends with static capabilities omit it.
   */
  ensureReady?(): Promise<void>;
  /** Create the agent session of a new conversation, working in `opts.cwd`. */
  createSession(conversationId: string, opts?: SessionOptions): Promise<{ sessionId: string }>;
  /**
   * Run one turn. Aborting `signal` cancels it: the backend then resolves `{status: "cancelled"}`.
   * The server may report a cancelled run finished before this resolves (after its cancel grace) and
   * then call `prompt` again for the same session: a backend whose agent is still stopping the
   * cancelled turn must wait for it (bounded by its own stop timeout), not fail the new turn.
   */
  prompt(input: TurnInput, sink: TurnSink, signal: AbortSignal): Promise<TurnResult>;
  /** List the sessions working in `opts.cwd` (when `capabilities.listSessions`). */
  listSessions?(opts?: SessionOptions): Promise<AgentSessionInfo[]>;
  /** Replay history of a session working in `opts.cwd` (when `capabilities.loadHistory`). */
  loadHistory?(sessionId: string, opts?: SessionOptions): Promise<AgentHistoryEntry[]>;
  /** Delete a session (when `capabilities.deleteSession`); otherwise the server only tombstones it. */
  deleteSession?(sessionId: string): Promise<void>;
  /** The model and reasoning catalogue (when `capabilities.models` or `capabilities.reasoning`). */
  catalogue?(): Promise<AgentCatalogue>;
  /**
   * Put a session in the mode `modeId` now, when it is open; it never opens a session or starts an
   * agent (a closed session gets its mode with its next turn, {@link TurnSettings.mode}).
   */
  setMode?(sessionId: string, modeId: string): Promise<SetModeResult>;
  /**
   * Which agent the mode table (`AGENT_MODE_RULES` in agent/modes.ts) applies to: its `initialize`
   * `agentInfo.name`, else the basename of its command; null (or absent) when unknown, and then the
   * table's rule for unknown agents decides which modes approve without asking.
   */
  modesAgent?(): string | null;
  /**
   * What the backend knows of a session's modes and commands right now (in memory; null when it knows
   * nothing), for the server to catch up with what it announced before the session had a conversation.
   */
  sessionInfo?(sessionId: string): { modes: AgentModes | null; commands: AgentCommandInfo[] | null } | null;
  /**
   * The directory the agent works in (ACP's `cwd`; the simulator's own repository), where the `changes`
   * extension reads what a conversation changed. Absent or undefined: none. Never sent to a client.
   */
  workdir?(): string | undefined;
  /** Stop the agent: end children cleanly, then forcefully after a timeout. */
  close(): Promise<void>;
}
