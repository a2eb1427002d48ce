import type { AgentBackend } from "../agent/port.js";
import type { ConversationRow } from "../store/store.js";

/**
 * A conversation's working directory, where its changes are read: today every conversation of a
 * server shares its agent's (the backend's `workdir`). The one place to change when conversations get
 * working directories of their own (agents and workspaces, worktrees). Never sent to a client.
 */
export function conversationWorkdir(
  backend: AgentBackend,
  _conversation: ConversationRow,
): string | undefined {
  return backend.workdir?.();
}
