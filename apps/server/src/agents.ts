// Several agents and workspaces (`agents:`, `workspaces:`): the checks that need the whole
// configuration and the file system, and the one shape both the single-agent settings and the
// lists come down to, which main.ts turns into backends and @pheby/server's options.
import { statSync } from "node:fs";
import { basename, isAbsolute, relative, resolve } from "node:path";
import { type AgentBackend, createAcpBackend, createSimulatorBackend, type OsUser } from "@pheby/server";
import { type AgentConfig, type AgentEntry, agentArgv } from "./agent-config.js";
import type { Config } from "./config.js";

/** The id of the agent and of the workspace the single-agent settings make. */
export const DEFAULT_ID = "default";

/** True when `path` is `dir` or lies inside it (both absolute). */
export function insideOrSame(path: string, dir: string): boolean {
  const rel = relative(dir, path);
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

/** One agent, configured either way. */
export interface AgentSpec {
  id: string;
  name: string;
  kind: "acp" | "simulator";
  /** The ACP agent's argv (empty for the simulator). */
  argv: string[];
  /** Where the agent process starts: its `cwd`, else its first workspace. */
  cwd: string;
  env: Record<string, string>;
  mode?: string;
  /** Its own roots, its workspaces and the worktrees directory: where it may deliver files from. */
  allowedFileRoots: string[];
  mcp: AgentConfig["mcp"];
  user?: OsUser;
  /** The directory Pheby shares with its user (meaningful with `user`). */
  sharedDir: string;
}

/** One workspace, configured either way. */
export interface WorkspaceSpec {
  id: string;
  name: string;
  /** Absolute. */
  path: string;
  /** The agents allowed in it; absent: every agent. */
  agents?: string[];
}

/** The ids of the configured agents, in order (the first is the default agent). */
const agentIds = (config: Config) => config.agents?.map((a) => a.id) ?? [DEFAULT_ID];

/**
 * Everything wrong with `agents:` and `workspaces:` that their schema cannot see: duplicate
 * ids, a workspace naming an agent that does not exist, an agent no workspace allows, paths that are relative, missing, not
 * directories, or that overlap the data directory, agent users a single shared directory cannot
 * serve, and MCP settings that differ between agents. One line per problem, each naming its key; empty when all is well.
 */
export function checkAgentsAndWorkspaces(config: Config): string[] {
  const problems: string[] = [];
  const dataDir = config.data_dir;
  const duplicates = (key: string, ids: readonly string[], what: string) =>
    ids.forEach((id, i) => {
      if (ids.indexOf(id) !== i) problems.push(`${key}.${i}.id: another ${what} already has the id "${id}"`);
    });
  duplicates("agents", config.agents?.map((a) => a.id) ?? [], "agent");
  duplicates("workspaces", config.workspaces?.map((w) => w.id) ?? [], "workspace");

  /** A directory that must be given absolute and exist, and that agents may reach (so not the data directory). */
  const directory = (key: string, path: string | undefined) => {
    if (path === undefined) return;
    if (!isAbsolute(path)) return problems.push(`${key}: must be an absolute path`);
    try {
      if (!statSync(path).isDirectory()) return problems.push(`${key}: ${path} is not a directory`);
    } catch {
      return problems.push(`${key}: ${path} does not exist`);
    }
    if (insideOrSame(path, dataDir) || insideOrSame(dataDir, path))
      problems.push(`${key}: must neither lie inside the data directory nor hold it (agents work there)`);
  };

  const known = agentIds(config);
  config.workspaces?.forEach((workspace, i) => {
    directory(`workspaces.${i}.path`, workspace.path);
    workspace.agents?.forEach((id, j) => {
      if (!known.includes(id))
        problems.push(
          `workspaces.${i}.agents.${j}: there is no agent "${id}" (the agents are ${known.map((k) => `"${k}"`).join(", ")})`,
        );
    });
  });

  config.agents?.forEach((agent, i) => {
    // An agent no workspace allows could never have a conversation (the default one: not even v1's).
    if (config.workspaces && !config.workspaces.some((w) => !w.agents || w.agents.includes(agent.id)))
      problems.push(
        `agents.${i} (${agent.id}): no workspace allows this agent (name it in a workspace's agents:, or leave that list out)`,
      );
    directory(`agents.${i}.cwd`, agent.cwd);
    agent.allowed_file_roots.forEach((root, j) => {
      const key = `agents.${i}.allowed_file_roots.${j}`;
      if (!isAbsolute(root)) problems.push(`${key}: must be an absolute path`);
      else if (insideOrSame(root, dataDir) || insideOrSame(dataDir, root))
        problems.push(`${key}: must neither lie inside the data directory nor hold it`);
    });
    if (agent.shared_dir !== undefined) {
      const key = `agents.${i}.shared_dir`;
      if (!isAbsolute(agent.shared_dir)) problems.push(`${key}: must be an absolute path`);
      else if (insideOrSame(agent.shared_dir, dataDir))
        problems.push(
          `${key}: must not lie inside the data directory (it stays 0700: the agent cannot enter it)`,
        );
    }
  });

  // Pheby runs one MCP server for all its agents: the entries must agree on it.
  const [firstAgent] = config.agents ?? [];
  config.agents?.forEach((agent, i) => {
    if (i > 0 && JSON.stringify(agent.mcp) !== JSON.stringify(firstAgent!.mcp))
      problems.push(
        `agents.${i}.mcp: must be the same as agents.0.mcp (${firstAgent!.id}): one MCP server of Pheby's serves every agent`,
      );
  });

  // Pheby has one shared directory (its MCP socket, copies of uploads) of one group: every agent
  // that runs as another user must reach it through that group.
  const users = (config.agents ?? []).flatMap((agent, i) => (agent.user ? [{ agent, i }] : []));
  const [first] = users;
  for (const { agent, i } of users.slice(1)) {
    if (agent.user!.gid !== first!.agent.user!.gid)
      problems.push(
        `agents.${i}.user: ${agent.user!.name}'s primary group differs from ${first!.agent.user!.name}'s (agents.${first!.i}.user); the agents' users must share one primary group, the shared directory's`,
      );
    if (resolve(sharedDirOf(agent, config.data_dir)) !== resolve(sharedDirOf(first!.agent, config.data_dir)))
      problems.push(
        `agents.${i}.shared_dir: must be the same for every agent with a user (one shared directory)`,
      );
  }
  return problems;
}

/** The directory Pheby shares with an agent's user: its `shared_dir`, else `<data_dir>-agent`. */
export const sharedDirOf = (agent: Pick<AgentConfig, "shared_dir">, dataDir: string) =>
  agent.shared_dir ?? `${dataDir}-agent`;

/** Where conversations' git worktrees are made: `worktrees_dir`, else `<data_dir>-worktrees`. */
export const worktreesDir = (config: Config) => config.worktrees_dir ?? `${config.data_dir}-worktrees`;

/**
 * The configured workspaces: `workspaces:`, else one workspace `default` in the default agent's
 * working directory.
 */
export function workspaceSpecs(config: Config): WorkspaceSpec[] {
  if (config.workspaces)
    return config.workspaces.map((w) => ({
      id: w.id,
      name: w.name ?? w.id,
      path: w.path,
      ...(w.agents ? { agents: [...w.agents] } : {}),
    }));
  const cwd = config.agents ? (config.agents[0]!.cwd ?? process.cwd()) : config.agent.cwd!;
  return [{ id: DEFAULT_ID, name: "Default", path: cwd }];
}

/**
 * The configured agents, the default first: the entries of `agents:`, else one agent `default`
 * made of the single-agent settings (as before several agents existed: its roots are its
 * `allowed_file_roots` and the worktrees directory, not its working directory).
 */
export function agentSpecs(config: Config): AgentSpec[] {
  const worktrees = worktreesDir(config);
  const workspaces = workspaceSpecs(config);
  const allowedIn = (id: string) => workspaces.filter((w) => !w.agents || w.agents.includes(id));
  if (!config.agents) {
    const agent = config.agent;
    const argv = agentArgv(agent);
    const listed = config.workspaces ? allowedIn(DEFAULT_ID).map((w) => w.path) : [];
    return [
      {
        id: DEFAULT_ID,
        name: agent.kind === "simulator" ? "Simulator" : basename(argv[0] ?? "agent"),
        kind: agent.kind,
        argv,
        cwd: agent.cwd!,
        env: agent.env,
        ...(agent.mode ? { mode: agent.mode } : {}),
        allowedFileRoots: [...agent.allowed_file_roots.map((root) => resolve(root)), ...listed, worktrees],
        mcp: agent.mcp,
        ...(agent.user ? { user: agent.user } : {}),
        sharedDir: sharedDirOf(agent, config.data_dir),
      },
    ];
  }
  return config.agents.map((agent: AgentEntry) => {
    const own = allowedIn(agent.id).map((w) => w.path);
    return {
      id: agent.id,
      name: agent.name ?? agent.id,
      kind: agent.kind,
      argv: agentArgv(agent),
      cwd: agent.cwd ?? own[0] ?? workspaces[0]!.path,
      env: agent.env,
      ...(agent.mode ? { mode: agent.mode } : {}),
      allowedFileRoots: [...agent.allowed_file_roots, ...own, worktrees],
      mcp: agent.mcp,
      ...(agent.user ? { user: agent.user } : {}),
      sharedDir: sharedDirOf(agent, config.data_dir),
    };
  });
}

/**
 * The keys an operator fixes when agent `index`'s command or directory is wrong: the single
 * agent's variables, or the entry of `agents:`.
 */
export function agentCommandKeys(
  config: Config,
  index: number,
): { command: string; cwd: string; user: string } {
  if (!config.agents)
    return {
      command: "PHEBY_AGENT_COMMAND / agent.command",
      cwd: "PHEBY_AGENT_CWD / agent.cwd",
      user: "PHEBY_AGENT_USER (agent.user)",
    };
  const id = config.agents[index]!.id;
  return {
    command: `agents.${index}.command (${id})`,
    cwd: `agents.${index}.cwd (${id}), or its first workspace`,
    user: `agents.${index}.user (${id})`,
  };
}

/** The backend of one agent: the simulator, or an ACP agent of its own (command, env, user, roots). */
export function agentBackend(agent: AgentSpec): AgentBackend {
  if (agent.kind === "simulator") return createSimulatorBackend();
  return createAcpBackend({
    command: agent.argv,
    cwd: agent.cwd,
    env: agent.env,
    ...(agent.user ? { user: agent.user } : {}),
    allowedFileRoots: agent.allowedFileRoots,
    ...(agent.mode ? { mode: agent.mode } : {}),
  });
}

/** @pheby/server's options for several agents and workspaces. */
export interface ServerAgentOptions {
  /** In order: the first is the default agent. */
  /** `user`: the OS user its backend runs the agent as (git makes its worktrees as that user). */
  agents: Array<{ id: string; name: string; backend: AgentBackend; user?: OsUser }>;
  workspaces: Array<{ id: string; name: string; path: string; agents?: string[] }>;
  /** Every agent's roots, without repeats: where the attachment store copies produced files from. */
  allowedFileRoots: string[];
}

/** The `agents` and `workspaces` options of @pheby/server, from the agents (with their backends) and workspaces. */
export function serverAgentOptions(
  agents: ReadonlyArray<{ spec: AgentSpec; backend: AgentBackend }>,
  workspaces: readonly WorkspaceSpec[],
): ServerAgentOptions {
  return {
    agents: agents.map(({ spec, backend }) => ({
      id: spec.id,
      name: spec.name,
      backend,
      // A simulator runs in Pheby's process: only an ACP agent has a user of its own.
      ...(spec.kind === "acp" && spec.user ? { user: spec.user } : {}),
    })),
    workspaces: workspaces.map((w) => ({
      id: w.id,
      name: w.name,
      path: w.path,
      ...(w.agents ? { agents: [...w.agents] } : {}),
    })),
    allowedFileRoots: [...new Set(agents.flatMap(({ spec }) => spec.allowedFileRoots))],
  };
}
