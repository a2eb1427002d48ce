// Configuration of pheby-server: an optional YAML file (PHEBY_CONFIG) overlaid
// by environment variables, validated with Zod. Env wins over YAML, as in the
// original plugin. Bad values stop the process with a readable message that
// names the setting and never echoes a secret.
//
// The settings map onto @pheby/server's options (snake_case names, seconds where the server
// counts ms): what a value may be, and its default, come from the server's own options schema
// (`optionRules`, the `DEFAULT_*` constants); this file adds only how env and YAML spell values,
// the operator's bounds, and the settings of the process itself (bind address, agent command).
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import {
  DEFAULT_ATTACHMENT_RETENTION_DAYS,
  DEFAULT_DELTA_INTERVAL_MS,
  DEFAULT_HEARTBEAT_INTERVAL_MS,
  DEFAULT_HOST,
  DEFAULT_HTTP_IDLE_TIMEOUT_MS,
  DEFAULT_LOCKOUT,
  DEFAULT_MISSED_GRACE_MS,
  DEFAULT_PORT,
  DEFAULT_REPLAY_LIMITS,
  optionRules,
} from "@pheby/server";
import { parse as parseYaml } from "yaml";
import { z } from "zod/v3";
import { AgentConfig, AgentEntry, MAX_AGENTS, MAX_WORKSPACES, WorkspaceEntry } from "./agent-config.js";
import { checkAgentsAndWorkspaces, insideOrSame, sharedDirOf } from "./agents.js";
import { bool, int, list, nonEmpty, seconds } from "./config-values.js";

/** Scheduled prompts (the `schedules` extension). */
const SchedulesConfig = z
  .object({
    /** A run missed while the server was down still runs once at start when younger than this. */
    missed_grace_seconds: int(0, 7 * 24 * 3_600).default(seconds(DEFAULT_MISSED_GRACE_MS)),
    /** Time zone of schedules created without one (default: the server's). */
    timezone: nonEmpty.pipe(optionRules.timezone).optional(),
  })
  .strict();

/**
 * Whose X-Forwarded-For is believed: `loopback`, `none` (either in any case), or the proxies' IP
 * addresses (a YAML list, or comma-separated in env); the server's rule decides what is valid.
 */
const trustedProxy = z
  .union([
    z
      .array(z.string())
      .min(1, 'must name at least one proxy (or be "none")')
      .transform((entries) => entries.map((entry) => entry.trim())),
    z.string().transform((value) => {
      const keyword = value.trim().toLowerCase();
      if (keyword === "loopback" || keyword === "none") return keyword;
      return value.split(",").map((entry) => entry.trim());
    }),
  ])
  .pipe(optionRules.trustedProxy);

/** The validated configuration. */
export const Config = z
  .object({
    secret: z.string().min(16, "must be at least 16 characters").optional(),
    bind_host: nonEmpty.default(DEFAULT_HOST),
    port: int(0, 65_535).default(DEFAULT_PORT),
    /**
     * The WebSocket URL phones reach this server at (behind Caddy: wss://<host>/ws), written into
     * pairing QR codes. Unset: pairing is refused with a message naming this setting.
     */
    public_url: z.string().trim().pipe(optionRules.publicUrl).optional(),
    data_dir: nonEmpty.default(".pheby-data"),
    debug: bool.default(false),
    log_chat_content: bool.default(false),
    attachment_retention_days: int(0, 36_500).default(DEFAULT_ATTACHMENT_RETENTION_DAYS),
    /** HTTP idle timeout: a transfer moving no byte for this long is cut (no cap on total duration). */
    http_idle_timeout_seconds: int(1, 3_600).default(seconds(DEFAULT_HTTP_IDLE_TIMEOUT_MS)),
    console: bool.default(false),
    /** Coalescing window of message.delta in ms; 0 sends one delta per agent chunk. */
    delta_interval_ms: int(0, 10_000).default(DEFAULT_DELTA_INTERVAL_MS),
    /** Offer permessage-deflate on the WebSocket. */
    ws_compression: bool.default(true),
    /** Offer the resume extension: keep a replay log per conversation, answer since_seq and client_message_id. */
    resume: bool.default(true),
    /** Bounds of each conversation's replay log: events, and bytes of event JSON (oldest evicted first). */
    replay_max_events: int(1, 1_000_000).default(DEFAULT_REPLAY_LIMITS.maxEvents),
    replay_max_bytes: int(1_024, 1_073_741_824).default(DEFAULT_REPLAY_LIMITS.maxBytes),
    /** Interval of WebSocket-level pings; a peer that misses one is dropped (half-open detection). */
    heartbeat_interval_ms: int(100, 3_600_000).default(DEFAULT_HEARTBEAT_INTERVAL_MS),
    /** Failed hellos/HTTP authentications from one address within the window that lock it out. */
    lockout_max_failures: int(1, 1_000).default(DEFAULT_LOCKOUT.maxFailures),
    /** The window in which those failures are counted. */
    lockout_window_seconds: int(1, 86_400).default(seconds(DEFAULT_LOCKOUT.windowMs)),
    /** How long a locked-out address is refused (4429 / HTTP 429). */
    lockout_duration_seconds: int(1, 86_400).default(seconds(DEFAULT_LOCKOUT.durationMs)),
    /** Whose X-Forwarded-For names the client for the lockout (see {@link trustedProxy}). */
    trusted_proxy: trustedProxy.default("loopback"),
    /**
     * Browser origins, besides the server's own, allowed to use it: CORS on the attachment and
     * answer routes, and the WebSocket handshake; env: comma-separated.
     */
    cors_origins: list(",").pipe(z.array(optionRules.corsOrigin)).default([]),
    /** Text (conversation names, commands, answers) in push payloads; false sends ids only. */
    push_preview: bool.default(true),
    /**
     * Allow push endpoints on plain http and on loopback, private or link-local addresses (a
     * self-hosted ntfy on the LAN). Off: a subscription cannot make the server call into the network.
     */
    push_allow_private: bool.default(false),
    /** The VAPID contact push services see: a mailto: or https: URL. */
    push_subject: z.string().trim().pipe(optionRules.pushSubject).optional(),
    agent: AgentConfig.default({}),
    /**
     * Several agents (YAML only; docs/agents.md): each entry takes every field of `agent:` plus
     * `id`, `name` and `kind` (`acp` by default). Not together with `agent:` / PHEBY_AGENT_*.
     * The first is the default agent.
     */
    agents: z.array(AgentEntry).min(1, "must list at least one agent").max(MAX_AGENTS).optional(),
    /** The directories conversations work in (YAML only). Unset: one workspace, the agent's cwd. */
    workspaces: z
      .array(WorkspaceEntry)
      .min(1, "must list at least one workspace")
      .max(MAX_WORKSPACES)
      .optional(),
    /**
     * Where a conversation's git worktree is made (`worktree: true`), outside the data directory.
     * Default: `<data_dir>-worktrees`, beside it.
     */
    worktrees_dir: nonEmpty.optional(),
    schedules: SchedulesConfig.default({}),
  })
  .strict()
  .superRefine((c, ctx) => {
    if (c.agent.kind === "acp" && !c.agent.command) {
      ctx.addIssue({
        code: z.ZodIssueCode.custom,
        path: ["agent", "command"],
        message: 'is required when the agent is acp (PHEBY_AGENT_COMMAND, e.g. "hermes acp")',
      });
    }
  });
/** The validated configuration. */
export type Config = z.infer<typeof Config>;

/** Environment variable → config path. These names are a stable interface for operators. */
export const ENV_NAMES = {
  PHEBY_SECRET: ["secret"],
  PHEBY_BIND_HOST: ["bind_host"],
  PHEBY_PORT: ["port"],
  PHEBY_PUBLIC_URL: ["public_url"],
  PHEBY_DATA_DIR: ["data_dir"],
  PHEBY_DEBUG: ["debug"],
  PHEBY_LOG_CHAT_CONTENT: ["log_chat_content"],
  PHEBY_ATTACHMENT_RETENTION_DAYS: ["attachment_retention_days"],
  PHEBY_HTTP_IDLE_TIMEOUT_SECONDS: ["http_idle_timeout_seconds"],
  PHEBY_CONSOLE: ["console"],
  PHEBY_DELTA_INTERVAL_MS: ["delta_interval_ms"],
  PHEBY_WS_COMPRESSION: ["ws_compression"],
  PHEBY_RESUME: ["resume"],
  PHEBY_REPLAY_MAX_EVENTS: ["replay_max_events"],
  PHEBY_REPLAY_MAX_BYTES: ["replay_max_bytes"],
  PHEBY_CORS_ORIGINS: ["cors_origins"],
  PHEBY_PUSH_PREVIEW: ["push_preview"],
  PHEBY_PUSH_ALLOW_PRIVATE: ["push_allow_private"],
  PHEBY_PUSH_SUBJECT: ["push_subject"],
  PHEBY_HEARTBEAT_INTERVAL_MS: ["heartbeat_interval_ms"],
  PHEBY_LOCKOUT_MAX_FAILURES: ["lockout_max_failures"],
  PHEBY_LOCKOUT_WINDOW_SECONDS: ["lockout_window_seconds"],
  PHEBY_LOCKOUT_DURATION_SECONDS: ["lockout_duration_seconds"],
  PHEBY_TRUSTED_PROXY: ["trusted_proxy"],
  PHEBY_AGENT: ["agent", "kind"],
  PHEBY_AGENT_COMMAND: ["agent", "command"],
  PHEBY_AGENT_CWD: ["agent", "cwd"],
  PHEBY_AGENT_MODE: ["agent", "mode"],
  PHEBY_AGENT_ALLOWED_FILE_ROOTS: ["agent", "allowed_file_roots"],
  PHEBY_AGENT_USER: ["agent", "user"],
  PHEBY_AGENT_SHARED_DIR: ["agent", "shared_dir"],
  PHEBY_AGENT_MCP: ["agent", "mcp", "enabled"],
  PHEBY_AGENT_MCP_TOOLS: ["agent", "mcp", "tools"],
  PHEBY_AGENT_MCP_ASK_TIMEOUT_SECONDS: ["agent", "mcp", "ask_timeout_seconds"],
  PHEBY_WORKTREES_DIR: ["worktrees_dir"],
  PHEBY_SCHEDULES_MISSED_GRACE_SECONDS: ["schedules", "missed_grace_seconds"],
  PHEBY_SCHEDULES_TIMEZONE: ["schedules", "timezone"],
} as const;

/** A configuration error with one line per bad setting. */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

function setPath(target: Record<string, unknown>, path: readonly string[], value: unknown) {
  let node = target;
  for (const key of path.slice(0, -1)) {
    if (typeof node[key] !== "object" || node[key] === null) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[path.at(-1)!] = value;
}

/** The env variable behind a config path (`cors_origins.0` → `PHEBY_CORS_ORIGINS`). */
function envNameOf(path: (string | number)[]): string | undefined {
  const joined = path.join(".");
  return Object.entries(ENV_NAMES).find(
    ([, p]) => joined === p.join(".") || joined.startsWith(`${p.join(".")}.`),
  )?.[0];
}

/**
 * Load the configuration from `env` (and the YAML file it names in
 * `PHEBY_CONFIG`). Throws a {@link ConfigError} listing every bad setting.
 */
export function loadConfig(env: NodeJS.ProcessEnv, cwd = process.cwd()): Config {
  let raw: Record<string, unknown> = {};
  const file = env.PHEBY_CONFIG;
  if (file) {
    let text: string;
    try {
      text = readFileSync(resolve(cwd, file), "utf8");
    } catch (err) {
      throw new ConfigError(
        `PHEBY_CONFIG: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? err})`,
      );
    }
    try {
      raw = (parseYaml(text) as Record<string, unknown> | null) ?? {};
    } catch (err) {
      throw new ConfigError(
        `PHEBY_CONFIG: ${file} is not valid YAML: ${(err as Error).message.split("\n")[0]}`,
      );
    }
    if (typeof raw !== "object" || Array.isArray(raw))
      throw new ConfigError(`PHEBY_CONFIG: ${file} must be a mapping`);
  }
  // Before env fills it in: the YAML's own `agent:` conflicts with `agents:` as much as PHEBY_AGENT_* does.
  const fileHasAgent = raw.agent !== undefined;
  for (const [name, path] of Object.entries(ENV_NAMES)) {
    const value = env[name];
    if (value !== undefined && value !== "") setPath(raw, path, value);
  }
  // First: with both, the single-agent settings' own errors would only hide the real mistake.
  const singleAgent = singleAgentSettings(fileHasAgent, env);
  if (raw.agents !== undefined && singleAgent.length > 0)
    throw new ConfigError(
      `invalid configuration:\n  agents: cannot be used with the single-agent settings (${singleAgent.join(", ")}); make that agent an entry of agents:`,
    );
  const parsed = Config.safeParse(raw);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => {
      const env = envNameOf(issue.path);
      const where = env ? `${env} (${issue.path.join(".")})` : issue.path.join(".") || "config";
      return `  ${where}: ${issue.message}`;
    });
    throw new ConfigError(`invalid configuration:\n${lines.join("\n")}`);
  }
  const config = parsed.data;
  const dataDir = resolve(cwd, config.data_dir);
  const shared = config.agent.shared_dir && resolve(cwd, config.agent.shared_dir);
  const worktrees = resolve(cwd, config.worktrees_dir ?? `${dataDir}-worktrees`);
  const problems: string[] = [];
  if (shared && insideOrSame(shared, dataDir)) {
    problems.push(
      "PHEBY_AGENT_SHARED_DIR (agent.shared_dir): must not lie inside the data directory (it stays 0700: the agent cannot enter it)",
    );
  }
  if (insideOrSame(worktrees, dataDir) || insideOrSame(dataDir, worktrees)) {
    problems.push(
      "PHEBY_WORKTREES_DIR (worktrees_dir): must neither lie inside the data directory nor hold it (agents work in it)",
    );
  }
  const resolved: Config = {
    ...config,
    data_dir: dataDir,
    worktrees_dir: config.worktrees_dir === undefined ? undefined : worktrees,
    agent: {
      ...config.agent,
      cwd: resolve(cwd, config.agent.cwd ?? "."),
      shared_dir: shared || undefined,
    },
  };
  problems.push(...checkAgentsAndWorkspaces(resolved));
  if (problems.length > 0)
    throw new ConfigError(`invalid configuration:\n${problems.map((line) => `  ${line}`).join("\n")}`);
  return resolved;
}

/**
 * Where the single-agent settings were given (the `agent:` key of the YAML file, PHEBY_AGENT_*
 * variables; an empty variable counts as unset), as the names an operator would look for.
 */
function singleAgentSettings(fileHasAgent: boolean, env: NodeJS.ProcessEnv): string[] {
  const names: string[] = [];
  if (fileHasAgent) names.push("agent (in the PHEBY_CONFIG file)");
  for (const [name, path] of Object.entries(ENV_NAMES))
    if (path[0] === "agent" && env[name] !== undefined && env[name] !== "")
      names.push(`${name} (${path.join(".")})`);
  return names;
}

/** The directory Pheby shares with the agent's user: `agent.shared_dir`, else `<data_dir>-agent`. */
export function agentSharedDir(config: Config): string {
  return sharedDirOf(config.agent, config.data_dir);
}

export { agentArgv } from "./agent-config.js";
