import { z } from "zod/v3";
import { boundedText, event, request } from "../common.js";
import { AGENT_STATUSES, LIMITS } from "../constants.js";

// The `workspaces` extension (FEATURE_WORKSPACES): several agents and workspaces on one server. Clients
// know agents and workspaces by ID and name only: no path of the server reaches them (docs/security.md).

/** `workspaces`: an agent's or a workspace's ID, as the server's configuration names it. */
export const WorkspaceScopedId = z
  .string()
  .regex(
    new RegExp(`^[a-z0-9-]{1,${LIMITS.workspaceIdChars}}$`),
    `must be 1..${LIMITS.workspaceIdChars} characters of a-z, 0-9 and -`,
  );

/** `workspaces`: an agent's ID. */
export const AgentId = WorkspaceScopedId.describe("An agent's ID ([a-z0-9-], 1..32 characters)");
/** `workspaces`: a workspace's ID. */
export const WorkspaceId = WorkspaceScopedId.describe("A workspace's ID ([a-z0-9-], 1..32 characters)");

const displayName = boundedText({ max: LIMITS.workspaceNameChars }).describe(
  "Display name, at most 200 characters",
);

// IDs the server sends are plain strings (a tolerant reader); the ones a client sends are checked.
const sentId = z.string().describe("[a-z0-9-], 1..32 characters");

/** `workspaces`: one agent the server runs. */
export const Agent = z
  .object({
    agent_id: sentId,
    name: displayName,
    status: z
      .enum(AGENT_STATUSES)
      .describe(
        "idle: not started yet (spawned on first use); starting; ready: running and answering; failed: could not start or crashed",
      ),
  })
  .describe("An agent");

/** `workspaces`: one workspace (a project directory of the server, known by ID and name only). */
export const Workspace = z
  .object({
    workspace_id: sentId,
    name: displayName,
    agents: z
      .array(sentId)
      .max(LIMITS.agents)
      .describe("The agents allowed in this workspace, the first being its default"),
    git: z.boolean().describe("true when the workspace is inside a git repository (worktrees possible)"),
  })
  .describe("A workspace");

/** `agents.list`: the agents this server runs. */
export const AgentsList = request("agents.list", {}, "List the agents");

/** `agents.snapshot`: reply to `agents.list` (requester only). */
export const AgentsSnapshot = event(
  "agents.snapshot",
  {
    agents: z
      .array(Agent)
      .max(LIMITS.agents)
      .describe("In configuration order, the first being the default agent"),
  },
  "The agents",
);

/**
 * `agents.changed`: an agent's status changed; to every `workspaces` connection. It has no
 * `conversation_id`, so it carries no `seq` and is not in the replay log: `agents.list` after a
 * reconnect.
 */
export const AgentsChanged = event("agents.changed", { agent: Agent }, "An agent's status changed");

/** `workspaces.list`: the workspaces this server offers. */
export const WorkspacesList = request("workspaces.list", {}, "List the workspaces");

/** `workspaces.snapshot`: reply to `workspaces.list` (requester only). */
export const WorkspacesSnapshot = event(
  "workspaces.snapshot",
  { workspaces: z.array(Workspace).max(LIMITS.workspaces).describe("In configuration order") },
  "The workspaces",
);

/**
 * `workspaces`: the fields `conversation.create` gains. With neither ID the default agent in the first
 * workspace that allows it; with only `workspace_id` that workspace's first agent; with only
 * `agent_id` the first workspace that allows it.
 */
export const workspacesCreateFields = {
  agent_id: AgentId.optional().describe("Only with the workspaces feature: the conversation's agent"),
  workspace_id: WorkspaceId.optional().describe(
    "Only with the workspaces feature: the conversation's workspace",
  ),
  worktree: z
    .boolean()
    .optional()
    .describe(
      "Only with the workspaces feature: true runs the conversation in a new git worktree of the workspace, on a new branch pheby/<id>",
    ),
};

/** `workspaces`: the filters `conversation.list` gains. */
export const workspacesListFilters = {
  agent_id: AgentId.optional().describe(
    "Only with the workspaces feature: list only this agent's conversations",
  ),
  workspace_id: WorkspaceId.optional().describe(
    "Only with the workspaces feature: list only this workspace's conversations",
  ),
};

/** `workspaces`: a conversation list entry's agent, workspace and branch (on `workspaces` connections). */
export const optionalWorkspacesFields = {
  agent_id: z.string().optional().describe("Only with the workspaces feature: the conversation's agent"),
  workspace_id: z
    .string()
    .optional()
    .describe("Only with the workspaces feature: the conversation's workspace"),
  branch: z
    .string()
    .nullable()
    .optional()
    .describe(
      "Only with the workspaces feature: the branch of the conversation's git worktree, or null without one",
    ),
};

/**
 * `workspaces`: the `agent_id` a model or reasoning request takes for the global scope (without it the
 * default agent's, as in v1).
 */
export const optionalAgentIdRequest = {
  agent_id: AgentId.optional().describe(
    "Only with the workspaces feature: the agent whose global setting this is; default: the default agent",
  ),
};

/** `workspaces`: the `agent_id` a `scope: "global"` change event carries on `workspaces` connections. */
export const optionalAgentIdEvent = {
  agent_id: z
    .string()
    .optional()
    .describe("Only with the workspaces feature, on a global change: the agent whose default changed"),
};

/** Parsed form of {@link Agent}. */
export type Agent = z.infer<typeof Agent>;
/** Parsed form of {@link Workspace}. */
export type Workspace = z.infer<typeof Workspace>;
