import type { AgentRegistry } from "../agents/registry.js";
import type { ConversationRow } from "../store/store.js";

/**
 * A conversation's working directory, where its changes are read (never sent to a client): a worktree
 * conversation's own, else its workspace's path (the registry's `workdirOf`). A backend with a
 * repository of its own and no working directory of an agent (the simulator: `workdir()` without
 * `cwd`, it never writes into a configured workspace) is read there instead. Looking the agent up does
 * not start it.
 */
export function conversationWorkdir(
  agents: AgentRegistry,
  conversation: ConversationRow,
): string | undefined {
  if (conversation.workdir) return conversation.workdir;
  const backend =
    (conversation.agent_id ? agents.agent(conversation.agent_id)?.backend : undefined) ??
    agents.defaultAgent.backend;
  const own = backend.cwd === undefined ? backend.workdir?.() : undefined;
  return own ?? agents.workdirOf(conversation);
}
