// Which Pheby extensions a client asks for in `hello.features`, and in what order: one list
// (`PhebyClientOptions.features`), the same names and defaults as the Kotlin client's `Features`.
// What a hello carries of it (at most 16 names, in FEATURE_PRIORITY order) is @pheby/protocol's
// helloFeatureNames, shared with the Kotlin client through meta.json.
import {
  FEATURE_ACTIVITY,
  FEATURE_CHANGES,
  FEATURE_DELTA_APPEND,
  FEATURE_INBOX,
  FEATURE_MODES,
  FEATURE_PUSH,
  FEATURE_QUEUE,
  FEATURE_RESUME,
  FEATURE_WORKSPACES,
} from "@pheby/protocol";

/**
 * What {@link PhebyClientOptions.features} asks for by default: `delta.append` (either way
 * `message.delta` handlers get the whole draft), `push` (adds no events), `resume` (`seq`, replay after
 * a drop, retry-safe sends), `queue` (`queue.changed` events), `activity` (tool detail: diffs and
 * output, approval previews, `tool.get`, `plan.updated`, `usage.updated`), `modes` (the agent's modes
 * and slash commands: `listModes`, `setMode`, `listCommands`, `mode.changed` and `commands.snapshot`
 * events, `conversation.history.mode_id`), `inbox` (status, unread and a preview on each list entry,
 * `conversation.status` events, read marks, archive, search), `workspaces` (agents and workspaces:
 * `listAgents`, `listWorkspaces`, `createConversation({ agentId, workspaceId, worktree })`, each list
 * entry's `agent_id`, `workspace_id` and `branch`, `agents.changed` events) and `changes` (what a
 * conversation changed: `listChanges`, `diffChange`, `changes.changed` events). Add to it for the others:
 * `features: [...DEFAULT_FEATURES, FEATURE_SCHEDULES]`; `thoughts` (the agent's thinking, often the
 * bulk of a run's bytes) is asked for only by apps that show it. `features: []` asks for none (plain v1).
 */
export const DEFAULT_FEATURES: readonly string[] = [
  FEATURE_DELTA_APPEND,
  FEATURE_PUSH,
  FEATURE_RESUME,
  FEATURE_QUEUE,
  FEATURE_ACTIVITY,
  FEATURE_MODES,
  FEATURE_INBOX,
  FEATURE_WORKSPACES,
  FEATURE_CHANGES,
];
