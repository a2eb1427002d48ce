/**
 * Where `conversation.create` puts a new conversation (the `workspaces` extension's rules): with
 * neither id, the default agent in the first workspace that allows it; with only `workspace_id`,
 * that workspace's first agent; with only `agent_id`, the first workspace that allows it. Anything
 * it cannot honour is `bad_request` naming the field, before anything is created.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { pathBaseOf } from "../activity/path-base.js";
import { ProtocolError } from "../errors.js";
import type { AgentSpec, WorkspaceSpec } from "./config.js";
import type { AgentRegistry } from "./registry.js";

/** What a client asked for (absent fields: not asked; a v1 connection asks for none). */
export interface PlacementRequest {
  agent_id?: string | undefined;
  workspace_id?: string | undefined;
  worktree?: boolean | undefined;
}

/** Where the conversation goes. */
export interface Placement {
  agent: AgentSpec;
  workspace: WorkspaceSpec;
  /** A worktree was asked for (the workspace is in a git working tree). */
  worktree: boolean;
}

/** See the file comment. Throws `bad_request` naming `agent_id`, `workspace_id` or `worktree`. */
export function placeConversation(agents: AgentRegistry, req: PlacementRequest): Placement {
  const agent = req.agent_id === undefined ? undefined : agents.agent(req.agent_id);
  if (req.agent_id !== undefined && !agent) throw bad("agent_id: no agent has this id (agents.list)");
  const workspace = req.workspace_id === undefined ? undefined : agents.workspace(req.workspace_id);
  if (req.workspace_id !== undefined && !workspace)
    throw bad("workspace_id: no workspace has this id (workspaces.list)");
  let placed: { agent: AgentSpec; workspace: WorkspaceSpec };
  if (agent && workspace) {
    if (!workspace.agents.includes(agent.id))
      throw bad("agent_id: this agent is not allowed in the workspace");
    placed = { agent, workspace };
  } else if (workspace) {
    placed = { agent: agents.agent(workspace.agents[0]!)!, workspace };
  } else {
    const chosen = agent ?? agents.defaultAgent;
    const first = agents.workspaces().find((w) => w.agents.includes(chosen.id));
    if (!first) throw bad("agent_id: no workspace allows this agent");
    placed = { agent: chosen, workspace: first };
  }
  const worktree = req.worktree === true;
  if (worktree && !isGit(placed.workspace.path))
    throw bad("worktree: the workspace is not in a git repository");
  return { ...placed, worktree };
}

/**
 * The directory lies inside a git working tree: its path base (activity/path-base.ts) holds a
 * `.git`. Only the file system is looked at; no git runs, so no repository configuration is read.
 */
export function isGit(path: string): boolean {
  return existsSync(join(pathBaseOf(path), ".git"));
}

function bad(message: string): ProtocolError {
  return new ProtocolError("bad_request", message);
}
