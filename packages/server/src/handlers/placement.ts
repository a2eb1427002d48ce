/**
 * The `workspaces` extension's side of the conversation and settings requests: the fields it adds
 * (read only on connections that enabled it; a v1 request's are ignored), the agent a settings
 * request is about, and the worktree of a new conversation.
 */
import { FEATURE_WORKSPACES } from "../agents/fields.js";
import type { Placement } from "../agents/placement.js";
import { ProtocolError } from "../errors.js";
import type { Peer } from "../outbox/outbox.js";
import type { ServerContext } from "./context.js";

/** The `workspaces` fields a request may carry. */
export interface WorkspacesRequestFields {
  agent_id?: string;
  workspace_id?: string;
  worktree?: boolean;
}

/** The request's `workspaces` fields, or none when the connection did not enable the extension. */
export function workspacesFields(peer: Peer, msg: object): WorkspacesRequestFields {
  if (!peer.features.has(FEATURE_WORKSPACES)) return {};
  const { agent_id, workspace_id, worktree } = msg as WorkspacesRequestFields;
  return {
    ...(typeof agent_id === "string" ? { agent_id } : {}),
    ...(typeof workspace_id === "string" ? { workspace_id } : {}),
    ...(typeof worktree === "boolean" ? { worktree } : {}),
  };
}

/**
 * The agent a models/reasoning request is about: the conversation's (an `agent_id` naming another
 * is `bad_request`), else `agent_id`, else the default agent. An unknown conversation is left to
 * the handler (its `conversation_not_found` keeps its place after the catalogue).
 */
export function settingsAgent(
  ctx: ServerContext,
  peer: Peer,
  msg: { conversation_id?: string | undefined },
): string {
  const asked = workspacesFields(peer, msg).agent_id;
  if (asked !== undefined && !ctx.agents.agent(asked))
    throw new ProtocolError("bad_request", "agent_id: no agent has this id (agents.list)");
  const conv = msg.conversation_id === undefined ? undefined : ctx.store.getConversation(msg.conversation_id);
  if (conv) {
    const own = ctx.agents.agentOf(conv).id;
    if (asked !== undefined && asked !== own)
      throw new ProtocolError("bad_request", "agent_id: the conversation belongs to another agent");
    return own;
  }
  return asked ?? ctx.agents.defaultAgent.id;
}

/** Where a new conversation works: its own worktree's directory and branch, or its workspace's path. */
export async function workdirFor(
  _ctx: ServerContext,
  placed: Placement,
  _conversationId: string,
): Promise<{ workdir: string | null; branch: string | null }> {
  if (!placed.worktree) return { workdir: null, branch: null };
  // MERGE(x-config): the one call site of worktrees/'s createWorktree(...): a worktree of
  // placed.workspace.path on a new branch pheby/<first 8 chars of the conversation id>, answering
  // { workdir, branch } (workdir: the same subfolder inside the worktree). Until it is wired, a
  // worktree in a git workspace is not_implemented (outside git it was bad_request already).
  throw new ProtocolError("not_implemented", "worktree: git worktrees are not available on this server");
}
