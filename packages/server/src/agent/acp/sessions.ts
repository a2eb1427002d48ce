/**
 * Opening ACP sessions in an agent process: new ones, and reopening known
 * ones in a process that has not seen them (resume, else load) after a
 * restart. `session/load` replays history, collected here instead of being
 * treated as live output.
 */
import type * as acp from "@agentclientprotocol/sdk";
import type { AgentHistoryEntry } from "../port.js";
import { stripMediaLines } from "./content.js";
import type { AgentProcess } from "./process.js";
import { modesOf, setMode, setSettings, withDefault } from "./session-settings.js";
import { legacyModelsOf } from "./settings.js";
import { type AcpState, drain, type SessionResponse, type SessionState } from "./state.js";

/** The agent cannot reopen a session a restarted process has not seen (it has neither resume nor load). */
export class CannotReopenError extends Error {
  override readonly name = "CannotReopenError";
}

/**
 * The catalogue's probe session, when `proc` still has it open and it works in `cwd`: a new session
 * that costs no request. A probe of another directory stays spare (it belongs to no conversation).
 */
export function takeSpare(state: AcpState, proc: AgentProcess, cwd: string): SessionState | null {
  const spare = state.spare;
  if (!spare || state.cwdOf(spare) !== cwd) return null;
  state.spare = null;
  return spare.openIn === proc && proc.alive ? spare : null;
}

/**
 * `session/new` in `cwd` (default the backend's own directory): a fresh session, whose settings are
 * the agent's defaults (for the catalogue).
 */
export async function newSession(
  state: AcpState,
  proc: AgentProcess,
  cwd: string = state.options.cwd,
): Promise<SessionState> {
  const response = await proc.request<acp.NewSessionResponse>(
    "session/new",
    { cwd, mcpServers: state.mcpServers() },
    state.requestTimeoutMs,
  );
  const session = state.session(response.sessionId, cwd);
  await opened(state, proc, session, response, true);
  state.fresh = { ...session.settings };
  return session;
}

/** Make sure `proc` has the session open: resume it (or load it) when this process has not seen it. */
export async function open(state: AcpState, proc: AgentProcess, session: SessionState): Promise<void> {
  if (session.openIn === proc) return;
  refuseDeleted(state, session.id);
  const caps = proc.init.agentCapabilities;
  if (caps?.sessionCapabilities?.resume) {
    const response = await proc.request<acp.ResumeSessionResponse>(
      "session/resume",
      { sessionId: session.id, cwd: state.cwdOf(session), mcpServers: state.mcpServers() },
      state.requestTimeoutMs,
    );
    await opened(state, proc, session, response);
  } else if (caps?.loadSession) {
    await load(state, proc, session);
  } else {
    throw new CannotReopenError(
      "the agent cannot reopen this conversation after a restart (no session/resume or session/load)",
    );
  }
}

/** `session/load`: collect the replayed messages instead of treating them as live output. */
export async function load(
  state: AcpState,
  proc: AgentProcess,
  session: SessionState,
): Promise<AgentHistoryEntry[]> {
  refuseDeleted(state, session.id);
  await drain(session);
  session.replay = [];
  session.replayMessageId = null;
  try {
    const response = await proc.request<acp.LoadSessionResponse | null>(
      "session/load",
      { sessionId: session.id, cwd: state.cwdOf(session), mcpServers: state.mcpServers() },
      state.requestTimeoutMs,
    );
    await drain(session);
    await opened(state, proc, session, response ?? {});
    return session.replay
      .map((e) => (e.role === "assistant" ? { ...e, text: stripMediaLines(e.text) } : e))
      .filter((e) => e.text.trim().length > 0);
  } finally {
    session.replay = null;
  }
}

/** Record what a session/new|load|resume response said, and put the session in the configured mode. */
async function opened(
  state: AcpState,
  proc: AgentProcess,
  session: SessionState,
  response: SessionResponse,
  fresh = false,
): Promise<void> {
  session.openIn = proc;
  setSettings(state, session, {
    configOptions: response.configOptions ?? [],
    legacyModels: legacyModelsOf(response),
  });
  session.modes = response.modes ?? null;
  if (fresh) state.defaultModeId = modesOf(session)?.currentModeId ?? null;
  const mode = state.options.mode;
  if (mode) await setMode(state, proc, session, mode);
  // What the conversation may choose from, and the mode it is in when Pheby has chosen none.
  const modes = modesOf(session);
  if (modes) state.host.sessionModes?.(session.id, withDefault(state, modes));
}

/** A session deleted through Pheby is never opened again (an agent would re-create it). */
function refuseDeleted(state: AcpState, sessionId: string): void {
  if (state.deleted.has(sessionId)) throw new Error("this conversation's agent session was deleted");
}
