// The agent settings of the configuration: the single-agent `agent:` block (and its PHEBY_AGENT_*
// variables), and the multi-agent `agents:` and `workspaces:` lists (YAML only), whose entries take
// every field of `agent:` plus an id and a name.

import { delimiter } from "node:path";
import { LIMITS } from "@pheby/protocol";
import {
  AGENT_TOOL_NAMES,
  DEFAULT_ASK_TIMEOUT_MS,
  lookupUser,
  type OsUser,
  optionRules,
} from "@pheby/server";
import { z } from "zod/v3";
import { bool, int, list, nonEmpty, seconds } from "./config-values.js";

/** At most this many agents and workspaces, and name lengths: the protocol's `LIMITS`. */
export const MAX_AGENTS = LIMITS.agents;
export const MAX_WORKSPACES = LIMITS.workspaces;
/** Longest agent or workspace name (what a phone shows). */
export const MAX_NAME_LENGTH = LIMITS.workspaceNameChars;

/** Pheby's MCP server, offered to ACP agents in their sessions (docs/agents.md). */
const AgentMcpConfig = z
  .object({
    enabled: bool.default(true),
    /** The tools offered; env: comma-separated. */
    tools: list(",")
      .pipe(z.array(optionRules.agentToolName))
      .default([...AGENT_TOOL_NAMES]),
    /** How long `ask_user` waits for the phone; keep it below the agent's MCP tool-call timeout. */
    ask_timeout_seconds: int(10, 3_600).default(seconds(DEFAULT_ASK_TIMEOUT_MS)),
  })
  .strict();

/** An OS user's login name, resolved now: an unknown user, or root, fails at start. */
const osUser = nonEmpty.transform((name, ctx): OsUser => {
  const user = lookupUser(name);
  if (!user) {
    ctx.addIssue({ code: z.ZodIssueCode.custom, message: `no such user: ${JSON.stringify(name)}` });
    return z.NEVER;
  }
  if (user.uid === 0) {
    ctx.addIssue({
      code: z.ZodIssueCode.custom,
      message: "must not be root: the agent would reach everything",
    });
    return z.NEVER;
  }
  return user;
});

/** What every agent is configured with, in `agent:` and in each entry of `agents:`. */
const agentFields = {
  /** Command line to spawn (ACP), split on whitespace unless `args` is given. */
  command: nonEmpty.optional(),
  /** Arguments array (YAML only); with `args`, `command` is the executable alone. */
  args: z.array(z.string()).optional(),
  cwd: nonEmpty.optional(),
  /** ACP session mode to select, e.g. "default" so Qwen Code asks permission. */
  mode: nonEmpty.optional(),
  env: z.record(z.string()).default({}),
  /** Roots from which the agent's produced files may be copied into the store; env: `:`-separated, like PATH. */
  allowed_file_roots: list(delimiter).pipe(z.array(nonEmpty)).default([]),
  mcp: AgentMcpConfig.default({}),
  /**
   * The OS user the agent runs as (a login name), resolved now: an unknown user, or root, fails
   * at start. Unset: the agent runs as Pheby's own user and can read all Pheby reads.
   */
  user: osUser.optional(),
  /**
   * The directory Pheby shares with the agent's user (its MCP socket, copies of uploads): made
   * group-owned by that user's group, setgid, 0770. Default: `<data_dir>-agent`, beside the data directory.
   */
  shared_dir: nonEmpty.optional(),
};

/** The single agent (`agent:`, PHEBY_AGENT_*): the simulator unless told otherwise. */
export const AgentConfig = z
  .object({ kind: z.enum(["simulator", "acp"]).default("simulator"), ...agentFields })
  .strict();
/** The single agent's settings. */
export type AgentConfig = z.infer<typeof AgentConfig>;

/** Agent and workspace ids (what clients name them by): the server's own rule. */
const id = optionRules.entityId;
const name = nonEmpty.pipe(z.string().max(MAX_NAME_LENGTH));

/**
 * One entry of `agents:`: an ACP agent (the default) or the simulator (a client developer's second
 * agent with no LLM). `name` defaults to the id.
 */
export const AgentEntry = z
  .object({ id, name: name.optional(), kind: z.enum(["acp", "simulator"]).default("acp"), ...agentFields })
  .strict()
  .superRefine((agent, ctx) => {
    if (agent.kind === "acp" && !agent.command)
      ctx.addIssue({
        code: z.ZodIssueCode.custom,
        path: ["command"],
        message: 'is required for an acp agent (e.g. "claude-code-acp")',
      });
  });
/** One configured agent of `agents:`. */
export type AgentEntry = z.infer<typeof AgentEntry>;

/** One entry of `workspaces:`: a directory conversations work in, and the agents allowed there. */
export const WorkspaceEntry = z
  .object({
    id,
    name: name.optional(),
    /** Absolute, and must exist (checked once the whole configuration is read). */
    path: nonEmpty,
    /** The agents allowed here, by id; default every agent. */
    agents: z.array(id).min(1, "must name at least one agent (or be left out: every agent)").optional(),
  })
  .strict();
/** One configured workspace. */
export type WorkspaceEntry = z.infer<typeof WorkspaceEntry>;
/** The argv of the ACP agent: `args` given → [command, ...args]; else `command` split on whitespace. */
export function agentArgv(agent: Pick<AgentConfig, "command" | "args">): string[] {
  if (!agent.command) return [];
  return agent.args ? [agent.command, ...agent.args] : agent.command.split(/\s+/).filter(Boolean);
}
