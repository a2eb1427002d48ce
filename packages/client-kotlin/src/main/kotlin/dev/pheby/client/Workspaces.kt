package dev.pheby.client

// The `workspaces` extension (docs/protocol.md, "Extension: agents and workspaces"): one server running
// several agents (Claude Code, Codex, Hermes…) over several projects. Asked for by default (as in
// @pheby/client). The server names its agents and workspaces by id and name only (never a path of the
// server); a new conversation picks an agent, a workspace and optionally a git worktree of its own
// (`createConversation(agentId = …, workspaceId = …, worktree = true)`), every conversation entry says
// which (`agentId`, `workspaceId`, `branch` on ConversationSummary, ConversationCreated and
// ConversationUpdated, in the generated models), `listConversations` filters by them, and the global model
// and reasoning calls take the agent they set (`agentId`). An agent's status changes arrive as
// `agents.changed` on PhebyClient.events: never with `seq`, never replayed (list again after a reconnect).
// Without the feature the server answers these requests `unknown_type` and ignores the added fields.

import dev.pheby.protocol.Agent
import dev.pheby.protocol.AgentsChanged
import dev.pheby.protocol.AgentsList
import dev.pheby.protocol.AgentsSnapshot
import dev.pheby.protocol.WorkspacesList
import dev.pheby.protocol.WorkspacesSnapshot
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.filter
import kotlinx.coroutines.flow.filterIsInstance

/**
 * `agents.list`: the server's agents (`agentId`, `name`, `status`: [dev.pheby.protocol.AgentStatus]
 * `IDLE` not started yet, `STARTING`, `READY`, `FAILED`; `Unknown` from a newer server: show it as idle),
 * in the server's configuration order, the default agent first (agents start on first use). Throws
 * [PhebyException] `unknown_type` without [Features.WORKSPACES].
 */
suspend fun PhebyClient.listAgents(): AgentsSnapshot = request(AgentsList())

/**
 * `workspaces.list`: the projects the server's agents work in (`workspaceId`, `name`, the `agents`
 * allowed in it, first the one a new conversation gets by default, and `git`: whether it is in a git
 * repository, so `worktree = true` and the `changes` extension can be offered). Never a path of the server.
 */
suspend fun PhebyClient.listWorkspaces(): WorkspacesSnapshot = request(WorkspacesList())

/**
 * Every `agents.changed` from now on, of [agentId] (null: of every agent): an agent started, became
 * ready, failed or stopped. Each one is the agent's state from then on (`agents.withChange(event)`).
 * They carry no `seq` and are not replayed after a drop: list again when the connection is back.
 */
fun PhebyClient.agentChanges(agentId: String? = null): Flow<AgentsChanged> =
    events.filterIsInstance<AgentsChanged>().filter { agentId == null || it.agent.agentId == agentId }

/**
 * This agent list with [changed]'s agent in place of the one with the same `agentId` (appended when the
 * list does not have it yet): what a picker shows after the event, without listing again.
 */
fun List<Agent>.withChange(changed: AgentsChanged): List<Agent> =
    if (any { it.agentId == changed.agent.agentId }) map { if (it.agentId == changed.agent.agentId) changed.agent else it } else this + changed.agent
