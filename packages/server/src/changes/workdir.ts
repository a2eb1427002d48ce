import type { AgentRegistry } from "../agents/registry.js";
import type { ConversationRow } from "../store/store.js";

/**
 * A conversation's working directory, where its changes are read: its own (a worktree's), else its
 * workspace's (the agents registry's rule). The simulator keeps a repository of its own instead (it
 * never writes into a configured workspace: docs/simulator.md). Never sent to a client.
 */
export function conversationWorkdir(
  agents: AgentRegistry,
  conversation: ConversationRow,
): string | undefined {
  const { backend } = agents.agentOf(conversation);
  if (backend.name === "simulator") return backend.workdir?.();
  return agents.workdirOf(conversation);
}
