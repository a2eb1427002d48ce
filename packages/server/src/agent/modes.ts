/**
 * Which agent modes approve without asking Pheby: the one table the server decides by (the
 * `auto_approves` of `modes.snapshot`, YOLO's mode, the asking mode of a run nobody started from a
 * client, a revoked device's choice undone) and the ACP backend moves out of. docs/agents.md lists it
 * per agent. The same mode ID means different things to different agents (Claude Code's `dontAsk`
 * denies what is not pre-approved, Hermes's `dont_ask` approves edits), so every decision is per agent.
 */

/** What the server knows of one agent's modes. */
export interface AgentModeRules {
  /**
   * Who the agent is: its `initialize` `agentInfo.name` and `title`, and the basename of the command
   * that starts it (matched the way mode IDs are, see {@link modeKey}).
   */
  readonly agent: readonly string[];
  /** Mode IDs in which the agent runs (some) tools without asking Pheby, as it names them. */
  readonly autoApproving: readonly string[];
  /** The mode YOLO puts a session in (everything runs without asking), or null when it has none. */
  readonly yolo: string | null;
  /**
   * The mode a run that may not approve without asking falls back to when neither the conversation's
   * nor the configured mode asks (absent: the agent's first mode that asks).
   */
  readonly asking?: string;
}

/**
 * The agents whose modes were read in their code (docs/agents.md, "Modes, commands, tool detail…").
 * A mode that approves only some actions by itself counts: marking it makes unattended runs ask,
 * while missing it would let them run tools nobody approved.
 */
export const AGENT_MODE_RULES = [
  {
    agent: ["@zed-industries/claude-code-acp", "Claude Code", "claude-code-acp"],
    // `dontAsk` asks nobody but denies what is not pre-approved: it does not approve.
    autoApproving: ["bypassPermissions", "acceptEdits"],
    yolo: "bypassPermissions",
    asking: "default",
  },
  {
    agent: ["qwen-code", "Qwen Code", "qwen"],
    // `auto`: a model classifier approves the actions it deems safe.
    autoApproving: ["yolo", "auto-edit", "auto"],
    yolo: "yolo",
    asking: "default",
  },
  {
    agent: ["gemini-cli", "Gemini CLI", "gemini"],
    autoApproving: ["yolo", "autoEdit"],
    yolo: "yolo",
    asking: "default",
  },
  {
    agent: ["codex-acp", "Codex", "codex"],
    // `auto`: commands and workspace edits run in its sandbox without asking (it asks to escalate).
    autoApproving: ["full-access", "auto"],
    yolo: "full-access",
    asking: "read-only",
  },
  {
    // Its modes are primary agents (`build`, `plan`, the user's own); `opencode.json` decides approval.
    agent: ["OpenCode", "opencode"],
    autoApproving: [],
    yolo: null,
  },
  {
    agent: ["hermes-agent", "Hermes", "hermes"],
    // `accept_edits`: workspace and /tmp edits; `dont_ask`: every edit but sensitive files.
    autoApproving: ["accept_edits", "dont_ask"],
    yolo: null,
    asking: "default",
  },
  {
    agent: ["pheby-simulator", "Pheby simulator"],
    autoApproving: ["yolo", "auto-edit"],
    yolo: "yolo",
    asking: "default",
  },
] as const satisfies readonly AgentModeRules[];

/** The simulator's name in {@link AGENT_MODE_RULES}. */
export const SIMULATOR_AGENT = "pheby-simulator";

/** A mode ID or agent name as matched: case, `-`, `_`, `@`, `/` and spaces ignored. */
export function modeKey(id: string): string {
  return id.toLowerCase().replace(/[-_\s@/]/g, "");
}

/**
 * For an agent not in the table: a mode whose ID names YOLO, bypassing permissions, full access,
 * auto-edit, accepting edits, not asking or `auto` counts as approving without asking (an unknown
 * agent's mode is presumed to approve when its name says it might).
 */
const UNKNOWN_AUTO_APPROVING = /yolo|bypass|fullaccess|autoedit|acceptedits|dontask|^auto$/;
/** For an agent not in the table: YOLO's mode is one whose ID names YOLO, bypassing or full access. */
const UNKNOWN_YOLO_LIKE = /yolo|bypass|fullaccess/;

/** The table's entry for `agent` (an `agentInfo` name or title, or a command basename), if any. */
export function modeRulesOf(agent: string | null | undefined): AgentModeRules | undefined {
  if (!agent) return undefined;
  const k = modeKey(agent);
  return AGENT_MODE_RULES.find((r) => r.agent.some((a) => modeKey(a) === k));
}

/** Whether, in the mode `modeId`, `agent` runs tools without asking Pheby. */
export function autoApproves(modeId: string, agent: string | null | undefined): boolean {
  const k = modeKey(modeId);
  const rules = modeRulesOf(agent);
  if (!rules) return UNKNOWN_AUTO_APPROVING.test(k);
  return rules.autoApproving.some((id) => modeKey(id) === k);
}

/**
 * The mode YOLO puts a session of `agent` in: the one of `modeIds` that approves everything without
 * asking, or undefined when the agent has none (YOLO then only answers its permission questions).
 */
export function yoloModeOf(modeIds: readonly string[], agent: string | null | undefined): string | undefined {
  const rules = modeRulesOf(agent);
  if (!rules) {
    return modeIds.find((id) => UNKNOWN_YOLO_LIKE.test(modeKey(id)));
  }
  const yolo = rules.yolo;
  return yolo === null ? undefined : modeIds.find((id) => modeKey(id) === modeKey(yolo));
}

/**
 * The mode a session of `agent` returns to when it may not stay in one that approves without asking:
 * `preferred` (the agent entry's configured mode, else the agent's own default) when it asks, else
 * the table's asking mode for the agent when offered, else the first mode that asks; undefined when
 * every mode approves without asking.
 */
export function askingModeOf(
  modeIds: readonly string[],
  preferred: string | null | undefined,
  agent: string | null | undefined,
): string | undefined {
  if (preferred && modeIds.includes(preferred) && !autoApproves(preferred, agent)) return preferred;
  const fallback = modeRulesOf(agent)?.asking;
  if (fallback && modeIds.includes(fallback) && !autoApproves(fallback, agent)) return fallback;
  return modeIds.find((id) => !autoApproves(id, agent));
}
