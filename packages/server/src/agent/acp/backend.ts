import { resolve } from "node:path";
/**
 * The ACP agent backend: drives any Agent Client Protocol agent (Hermes, Qwen
 * Code, Claude Code, Codex, Gemini CLI, …) spawned as a child process over stdio.
 * The mapping is documented in docs/agents.md.
 *
 * This file is the facade of the port; the parts, from the bottom: `state.ts`
 * (session state), `process.ts` (one agent process), `settings.ts` /
 * `session-settings.ts` (models, effort, modes), `sessions.ts` (new, resume,
 * load), `updates.ts` (session/update), `supervisor.ts` (spawn, respawn,
 * backoff), `questions.ts` (permission, elicitation), `prompt.ts` (a turn).
 */

import { homedir } from "node:os";
import type { InitializeResponse, ListSessionsResponse } from "@agentclientprotocol/sdk";
import { FileRoots } from "../../files/roots.js";
import { HostPaths } from "../../util/host-paths.js";
import type {
  AgentBackend,
  AgentCapabilities,
  AgentCatalogue,
  AgentHistoryEntry,
  AgentHost,
  AgentSessionInfo,
  SessionOptions,
  SetModeResult,
  TurnInput,
  TurnResult,
  TurnSink,
} from "../port.js";
import { hermesDeleteCommand, isHermes, runCommand } from "./hermes.js";
import type { AcpBackendOptions } from "./options.js";
import { AgentGoneError, type AgentProcess, errorMessage } from "./process.js";
import { prompt } from "./prompt.js";
import { elicitation, permission } from "./questions.js";
import { modesAgentOf, modesOf, switchMode, withDefault } from "./session-settings.js";
import { load, newSession, takeSpare } from "./sessions.js";
import { catalogueOf, hasModels, hasReasoning } from "./settings.js";
import { AcpState } from "./state.js";
import { agentEnv, Supervisor } from "./supervisor.js";
import { enqueue, hermesNotification } from "./updates.js";

export type { AcpBackendOptions } from "./options.js";

const MAX_LIST_PAGES = 50;

class AcpBackend implements AgentBackend {
  readonly name = "acp";
  readonly cwd: string;
  readonly #state: AcpState;
  readonly #supervisor: Supervisor;

  constructor(options: AcpBackendOptions) {
    const state = new AcpState(options);
    this.#state = state;
    this.cwd = options.cwd;
    this.#supervisor = new Supervisor(state, {
      update: (n) => enqueue(state, n),
      permission: (p, s) => permission(state, p, s),
      elicitation: (p, s) => elicitation(state, p, s),
      hermesNotification: (p) => hermesNotification(state, p),
    });
  }

  /** The live agent process, if any (the backend's tests reach it to simulate a crash). */
  protected get proc(): AgentProcess | null {
    return this.#supervisor.current;
  }

  /**
   * What the agent declared at `initialize`. Until the agent first runs, optimistic values
   * (everything ACP can do); call {@link ensureReady} for the real ones.
   */
  get capabilities(): AgentCapabilities {
    const { fresh, modelEfforts } = this.#state;
    const init = this.#supervisor.current?.init ?? this.#supervisor.lastInit;
    const caps = init?.agentCapabilities;
    const known = this.#supervisor.lastInit !== null;
    return {
      listSessions: known ? Boolean(caps?.sessionCapabilities?.list) : true,
      loadHistory: known ? Boolean(caps?.loadSession) : true,
      deleteSession: known
        ? Boolean(caps?.sessionCapabilities?.delete) || this.#hermesDelete(init, "") !== null
        : true,
      models: fresh ? hasModels(fresh) : true,
      reasoning: fresh ? hasReasoning(fresh) || [...modelEfforts.values()].some((e) => e.length > 0) : true,
      images: known ? Boolean(caps?.promptCapabilities?.image) : true,
    };
  }

  async start(host: AgentHost): Promise<void> {
    const { options } = this.#state;
    this.#state.host = host;
    // The directories it works in (its workspaces) are roots of its files and its working directories.
    const workspaces = host.serverPaths?.workspaces ?? [];
    this.#state.roots = new FileRoots(
      [...options.allowedFileRoots, ...workspaces],
      (root) => host.log.warn({ root }, "allowed file root does not exist; ignored"),
      host.serverPaths ? [host.serverPaths.dataDir] : [],
    );
    this.#state.paths = new HostPaths({
      dataDir: host.serverPaths?.dataDir,
      agentCommand: options.command,
      agentPath: options.env?.PATH,
      workdirs: [options.cwd, ...workspaces, ...(host.serverPaths ? [host.serverPaths.workdir] : [])],
      homes: [homedir(), ...(options.env?.HOME ? [options.env.HOME] : [])],
    });
  }

  /** The agent's `cwd`, where the `changes` extension reads a conversation's changes. */
  workdir(): string {
    return resolve(this.#state.options.cwd);
  }

  /** Start the agent if needed so {@link capabilities} reflects what it declared. */
  async ensureReady(): Promise<void> {
    await this.#supervisor.process();
  }

  async createSession(_conversationId: string, opts?: SessionOptions): Promise<{ sessionId: string }> {
    const proc = await this.#supervisor.process();
    const cwd = opts?.cwd ?? this.#state.options.cwd;
    return {
      sessionId: (takeSpare(this.#state, proc, cwd) ?? (await newSession(this.#state, proc, cwd))).id,
    };
  }

  prompt(input: TurnInput, sink: TurnSink, signal: AbortSignal): Promise<TurnResult> {
    return prompt(this.#state, this.#supervisor, input, sink, signal);
  }

  async listSessions(opts?: SessionOptions): Promise<AgentSessionInfo[]> {
    const cwd = opts?.cwd ?? this.#state.options.cwd;
    const proc = await this.#supervisor.process();
    if (!proc.init.agentCapabilities?.sessionCapabilities?.list) return [];
    const out: AgentSessionInfo[] = [];
    let cursor: string | null | undefined;
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const response = await proc.request<ListSessionsResponse>(
        "session/list",
        { cwd, ...(cursor ? { cursor } : {}) },
        this.#state.requestTimeoutMs,
      );
      for (const s of response.sessions) {
        // Hermes still lists a session it deleted on our behalf (it keeps it in memory).
        if (s.sessionId === this.#state.spare?.id || this.#state.deleted.has(s.sessionId)) continue;
        // An agent that ignores the filter lists other directories' sessions too: not this one's.
        if (s.cwd && s.cwd !== cwd) continue;
        out.push({ sessionId: s.sessionId, title: s.title ?? null, updatedAt: s.updatedAt ?? null, cwd });
      }
      cursor = response.nextCursor;
      if (!cursor) break;
    }
    return out;
  }

  async loadHistory(sessionId: string, opts?: SessionOptions): Promise<AgentHistoryEntry[]> {
    const proc = await this.#supervisor.process();
    if (!proc.init.agentCapabilities?.loadSession)
      throw new Error("the agent cannot replay history (no session/load)");
    const session = this.#state.session(sessionId, opts?.cwd);
    // A replay would interleave with the live turn's updates.
    if (session.turn) throw new Error("the session has a running turn");
    return load(this.#state, proc, session);
  }

  /**
   * Close and delete the session where the agent can: `session/close`, `session/delete`, and for
   * Hermes (which has neither over ACP) `hermes sessions delete -y <id>` with the agent's own
   * command and environment (the same HERMES_HOME). The session is never opened again after.
   */
  async deleteSession(sessionId: string): Promise<void> {
    const proc = await this.#supervisor.process();
    const caps = proc.init.agentCapabilities?.sessionCapabilities;
    const hermes = caps?.delete ? null : this.#hermesDelete(proc.init, sessionId);
    if (!caps?.delete && !caps?.close && !hermes)
      throw new Error("the agent cannot close or delete sessions");
    const { options, requestTimeoutMs: timeout } = this.#state;
    this.#state.deleted.add(sessionId);
    if (caps?.close) await proc.request("session/close", { sessionId }, timeout);
    if (caps?.delete) await proc.request("session/delete", { sessionId }, timeout);
    if (hermes)
      await runCommand(hermes, {
        cwd: options.cwd,
        env: agentEnv(options),
        timeoutMs: timeout,
        ...(options.user ? { user: options.user } : {}),
      });
    const session = this.#state.sessions.get(sessionId);
    if (session?.unsolicited) clearTimeout(session.unsolicited.timer);
    this.#state.sessions.delete(sessionId);
  }

  async catalogue(): Promise<AgentCatalogue> {
    const proc = await this.#supervisor.process();
    const state = this.#state;
    if (!state.fresh) {
      // Models are per session in ACP: open one to learn the agent's defaults. It is kept for
      // the next conversation rather than left behind empty, and hidden until then.
      const spare = await newSession(state, proc);
      state.host.hideSession(spare.id);
      state.spare = spare;
    }
    return catalogueOf(
      state.fresh ?? { configOptions: [], legacyModels: null },
      proc.agentName,
      state.modelEfforts,
    );
  }

  /** Switch an open session's mode now; a session not open in the live process gets it with its next turn. */
  async setMode(sessionId: string, modeId: string): Promise<SetModeResult> {
    const proc = this.#supervisor.current;
    const session = this.#state.sessions.get(sessionId);
    if (!proc?.alive || !session || session.openIn !== proc) return { outcome: "closed" };
    try {
      const result = await switchMode(this.#state, proc, session, modeId);
      return result.ok ? { outcome: "applied" } : { outcome: "refused", reason: result.reason };
    } catch (err) {
      // The agent died meanwhile: its next process opens the session in the conversation's mode.
      if (err instanceof AgentGoneError) return { outcome: "closed" };
      return { outcome: "refused", reason: this.#state.paths.scrub(errorMessage(err)) };
    }
  }

  modesAgent(): string | null {
    return modesAgentOf(this.#state);
  }

  sessionInfo(sessionId: string) {
    const session = this.#state.sessions.get(sessionId);
    if (!session) return null;
    const modes = modesOf(session);
    return { modes: modes && withDefault(this.#state, modes), commands: session.commands };
  }

  /** The command deleting a Hermes session, when the agent is Hermes started as `… acp`. */
  #hermesDelete(init: InitializeResponse | null | undefined, sessionId: string): string[] | null {
    return isHermes(init) ? hermesDeleteCommand(this.#state.options.command, sessionId) : null;
  }

  async close(): Promise<void> {
    for (const s of this.#state.sessions.values()) if (s.unsolicited) clearTimeout(s.unsolicited.timer);
    await this.#supervisor.close();
  }
}

/** Create the ACP backend. The agent is spawned on first need, not here. */
export function createAcpBackend(
  options: AcpBackendOptions,
): AgentBackend & Required<Pick<AgentBackend, "ensureReady">> {
  return new AcpBackend(options);
}
