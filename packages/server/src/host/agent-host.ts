/**
 * The {@link AgentHost} the server hands its agent backend: what the agent does outside a turn
 * (output, wake-ups) becomes a server-started run in the conversation of its session; session
 * titles and hidden sessions go to the store; its modes, commands and compactions to the modes;
 * Pheby's own tools come from the MCP service.
 */
import { resolve } from "node:path";
import type { AgentHost, AgentTools } from "../agent/port.js";
import { applySessionTitle } from "../conversations/titles.js";
import type { Outbox } from "../outbox/outbox.js";
import type { AgentActivity } from "../runs/activity.js";
import type { RunEngine } from "../runs/engine.js";
import type { Modes } from "../settings/modes.js";
import type { ConversationRow, Store } from "../store/store.js";
import { newId } from "../util/ids.js";
import type { Clock } from "../util/time.js";

/** What {@link createAgentHost} needs. */
export interface AgentHostDeps {
  store: Store;
  outbox: Outbox;
  runs: RunEngine;
  /** Where the agent's modes, commands and compactions go (the `modes` extension). */
  modes: Modes;
  /** Plans and usage the agent reports outside a turn. */
  activity: AgentActivity;
  /** The agent this host serves: its sessions are looked up (and hidden) under its id. */
  agentId: string;
  /** The backend's name, the `source` of the sessions it hides. */
  source: string;
  /** The directories the agent works in (its workspaces' paths). */
  workspaces: readonly string[];
  /** Where the agent's process status goes (the registry: `agents.changed`). */
  status?: AgentHost["agentStatus"];
  clock: Clock;
  /** Pheby's MCP tools; undefined when the operator does not offer them. */
  tools: AgentTools | undefined;
  dataDir: string;
  logChatContent: boolean;
  log: AgentHost["log"];
}

/** Build the host callbacks of one agent's backend. */
export function createAgentHost(deps: AgentHostDeps): AgentHost {
  const { store, runs, log, agentId } = deps;
  /** A run the agent's output outside any turn starts, in the conversation of its session. */
  const serverRun = (what: string, sessionId: string, start: (conv: ConversationRow) => Promise<unknown>) => {
    const conv = store.conversationBySession(sessionId, agentId);
    if (!conv) {
      log.warn({ session: sessionId }, `${what} for an unknown session dropped`);
      return;
    }
    start(conv).catch((err) => log.error({ err }, `${what} failed`));
  };
  return {
    unsolicited: (message) =>
      serverRun("unsolicited output", message.sessionId, (conv) =>
        runs.unsolicited(conv, message.text, message.kind),
      ),
    wake: (message) =>
      serverRun("wake-up", message.sessionId, (conv) => runs.wake(conv, message.text, message.meta)),
    tools: deps.tools,
    // Outside any turn: the conversation's plan or usage, of no run.
    plan(sessionId, entries) {
      const conv = store.conversationBySession(sessionId, agentId);
      if (conv) deps.activity.plan(conv.id, null, entries);
    },
    usage(sessionId, usage) {
      const conv = store.conversationBySession(sessionId, agentId);
      if (conv) deps.activity.usage(conv.id, usage);
    },
    sessionTitle(sessionId, title) {
      applySessionTitle(store, deps.outbox, agentId, sessionId, title);
    },
    sessionModes: (sessionId, modes) => deps.modes.sessionModes(agentId, sessionId, modes),
    modeChanged: (sessionId, modeId) => deps.modes.modeChanged(agentId, sessionId, modeId),
    sessionCommands: (sessionId, commands) => deps.modes.sessionCommands(agentId, sessionId, commands),
    compacted: (sessionId) => deps.modes.compacted(agentId, sessionId),
    hideSession(sessionId) {
      store.hideSession({
        id: newId(),
        session_id: sessionId,
        source: deps.source,
        at: deps.clock.now(),
        agent_id: agentId,
      });
    },
    ...(deps.status ? { agentStatus: deps.status } : {}),
    serverPaths: { dataDir: resolve(deps.dataDir), workdir: process.cwd(), workspaces: deps.workspaces },
    logChatContent: deps.logChatContent,
    log,
  };
}
