/**
 * The state the ACP backend's parts share, below all of them: each session's
 * state and the backend-wide settings knowledge. Nothing here talks to the
 * agent.
 */
import type * as acp from "@agentclientprotocol/sdk";
import type { ReasoningEffort } from "@pheby/protocol";
import { PathBases } from "../../activity/path-base.js";
import type { FileRoots } from "../../files/roots.js";
import type { HostPaths } from "../../util/host-paths.js";
import type { AgentCommandInfo, AgentHistoryEntry, AgentHost, McpServerSpec } from "../port.js";
import type { AcpBackendOptions } from "./options.js";
import type { AgentProcess } from "./process.js";
import type { SessionSettingsState } from "./settings.js";
import type { Turn } from "./turn.js";

/** One agent session as the backend tracks it. */
export interface SessionState {
  id: string;
  settings: SessionSettingsState;
  modes: acp.SessionModeState | null;
  /** The slash commands the agent last announced for it (null: none yet). */
  commands: AgentCommandInfo[] | null;
  /**
   * The mode Pheby is switching the session to (its request in flight): a mode update naming it is
   * Pheby's own change echoed, not the agent changing mode by itself.
   */
  switchingTo: string | null;
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
  /** Its working directory (ACP `cwd`): its conversation's; null until known (then the backend's own). */
  cwd: string | null;
}

/** What session/new, session/load and session/resume answer. */
export type SessionResponse = acp.NewSessionResponse | acp.LoadSessionResponse | acp.ResumeSessionResponse;

/** The backend's shared state: options, host, sessions, and what the agent said about settings. */
export class AcpState {
  /** Set by `start()`, before any other call. */
  host!: AgentHost;
  /** The allowed file roots, resolved by `start()`. */
  roots!: FileRoots;
  /** The host's paths to keep out of agent text that reaches a client, known from `start()`. */
  paths!: HostPaths;
  readonly requestTimeoutMs: number;
  /** Each working directory's path base, computed once (paths a client sees are relative to it). */
  readonly pathBases = new PathBases();
  readonly sessions = new Map<string, SessionState>();
  /** The mode the latest fresh session opened in, before Pheby switched it: the agent's default mode. */
  defaultModeId: string | null = null;
  /** Settings of the latest fresh session: the agent's defaults, for the catalogue. */
  fresh: SessionSettingsState | null = null;
  /**
   * The session opened to read the catalogue, until a conversation takes it. Hidden through the
   * host (persisted), so an agent that keeps sessions never shows it as an empty conversation.
   */
  spare: SessionState | null = null;
  /** The efforts each model offered when a session used it (OpenCode's change with the model). */
  readonly modelEfforts = new Map<string, ReasoningEffort[]>();
  /** What the live (or latest) agent process said at `initialize`. */
  init: acp.InitializeResponse | null = null;
  /** Pheby's MCP server as the live agent process may launch it (null: not offered). */
  mcpServer: McpServerSpec | null = null;
  /**
   * Sessions deleted through Pheby. They are never loaded, resumed or prompted again: with Hermes,
   * which keeps a deleted session in memory, a later load would write it back.
   */
  readonly deleted = new Set<string>();

  /** The `mcpServers` of a session request: Pheby's own server when it is offered. */
  mcpServers(): McpServerSpec[] {
    return this.mcpServer ? [this.mcpServer] : [];
  }

  constructor(readonly options: AcpBackendOptions) {
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
  }

  /** The working directory of a session: its own, else the backend's. */
  cwdOf(session: SessionState): string {
    return session.cwd ?? this.options.cwd;
  }

  /** The session's state, created on first sight; `cwd`, when given, is its working directory from now on. */
  session(id: string, cwd?: string): SessionState {
    let s = this.sessions.get(id);
    if (s && cwd !== undefined) s.cwd = cwd;
    if (!s) {
      s = {
        id,
        settings: { configOptions: [], legacyModels: null },
        modes: null,
        commands: null,
        switchingTo: null,
        queue: Promise.resolve(),
        turn: null,
        turnEnded: Promise.resolve(),
        replay: null,
        replayMessageId: null,
        openIn: null,
        unsolicited: null,
        cwd: cwd ?? null,
      };
      this.sessions.set(id, s);
    }
    return s;
  }
}

/** Wait until every queued update of the session has been applied. */
export async function drain(session: SessionState): Promise<void> {
  let last: Promise<void> | undefined;
  while (last !== session.queue) {
    last = session.queue;
    await last;
  }
}
