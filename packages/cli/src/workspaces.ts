// The `workspaces` extension on the command line: how agents, workspaces and a conversation's place
// (agent, workspace, worktree branch) are shown.
import type { Agent, Workspace } from "@pheby/client";
import { AGENT_STATUSES } from "@pheby/protocol";

/**
 * Where a conversation runs (with `workspaces`): `agent@workspace`, and its worktree's branch in
 * brackets; empty without the extension's fields.
 */
export function placeOf(entry: {
  agent_id?: string | undefined;
  workspace_id?: string | undefined;
  branch?: string | null | undefined;
}): string {
  if (entry.agent_id === undefined && entry.workspace_id === undefined) return "";
  const branch = entry.branch ? ` [${entry.branch}]` : "";
  return `${entry.agent_id ?? "?"}@${entry.workspace_id ?? "?"}${branch}`;
}

/** An agent status as shown: one this CLI does not know (a newer server's) is `idle`, as docs/protocol.md asks. */
export function shownAgentStatus(status: string): string {
  return (AGENT_STATUSES as readonly string[]).includes(status) ? status : "idle";
}

/** One line of `pheby agents`: ID, status, name; the first (the default agent) marked with `*`. */
export function agentLine(agent: Agent, isDefault: boolean): string {
  return `${isDefault ? "*" : " "} ${agent.agent_id.padEnd(12)}  ${shownAgentStatus(agent.status).padEnd(8)}  ${agent.name}`;
}

/** One line of `pheby workspaces`: ID, `git` or `-`, the agents allowed (its default first), name. */
export function workspaceLine(workspace: Workspace): string {
  return `${workspace.workspace_id.padEnd(12)}  ${(workspace.git ? "git" : "-").padEnd(3)}  ${workspace.agents.join(",").padEnd(20)}  ${workspace.name}`;
}
