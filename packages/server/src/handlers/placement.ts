/**
 * The `workspaces` extension's side of the conversation and settings requests: the fields it adds
 * (read only on connections that enabled it; a v1 request's are ignored), the agent a settings
 * request is about, and the worktree of a new conversation.
 */
import { FEATURE_WORKSPACES } from "../agents/fields.js";
import type { Placement } from "../agents/placement.js";
import { ProtocolError } from "../errors.js";
import { GitTimeoutError } from "../git/errors.js";
import type { Peer } from "../outbox/outbox.js";
import { WorktreeError } from "../worktrees/create.js";
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

/**
 * Where a new conversation works: its own worktree's directory and branch (`worktree: true`), or its
 * workspace's path (`workdir: null`). A workspace whose repository has no commit is `bad_request`
 * naming `worktree` (one outside git was refused by the placement already); git failing otherwise
 * is `internal_error`, with no server path in the message.
 */
export async function workdirFor(
  ctx: ServerContext,
  placed: Placement,
  conversationId: string,
): Promise<{ workdir: string | null; branch: string | null }> {
  if (!placed.worktree) return { workdir: null, branch: null };
  try {
    const made = await ctx.worktrees.create(placed.agent.id, placed.workspace.path, conversationId);
    return { workdir: made.cwd, branch: made.branch };
  } catch (err) {
    if (err instanceof WorktreeError) throw new ProtocolError("bad_request", `worktree: ${err.message}`);
    ctx.log.warn({ err, conversation: conversationId }, "could not make the conversation's worktree");
    throw new ProtocolError(
      "internal_error",
      err instanceof GitTimeoutError
        ? "git did not answer in time"
        : "worktree: git could not make the worktree",
    );
  }
}

/**
 * Take a deleted conversation's worktree away when it holds no uncommitted change (the branch
 * stays); one with changes stays for the operator (`pheby-server worktrees`). Never fails the
 * deletion: what went wrong is logged.
 */
export async function dropWorktree(ctx: ServerContext, conversationId: string): Promise<void> {
  try {
    const removed = await ctx.worktrees.remove(conversationId);
    if (removed.status === "dirty" || removed.status === "broken")
      ctx.log.info(
        { conversation: conversationId, worktree: removed.status },
        "the deleted conversation's worktree is kept (pheby-server worktrees lists it)",
      );
  } catch (err) {
    ctx.log.warn(
      { err, conversation: conversationId },
      "could not remove the deleted conversation's worktree",
    );
  }
}
