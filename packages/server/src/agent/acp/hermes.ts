/**
 * What Pheby knows about Hermes Agent over ACP that ACP itself does not say. Each fact was read
 * in hermes-agent 0.19.0's sources (paths below, inside the `hermes-agent` PyPI package) and
 * checked against a live `hermes acp`; docs/agents.md lists them with their upstream status.
 */

import { spawn } from "node:child_process";
import type * as acp from "@agentclientprotocol/sdk";
import type { OsUser } from "../../agent-user/lookup.js";
import { spawnAs } from "../../agent-user/spawn.js";

/** `agentInfo.name` of Hermes Agent (acp_adapter/server.py). */
export const HERMES_AGENT_NAME = "hermes-agent";

/** Whether the agent behind `init` is Hermes Agent. */
export function isHermes(init: acp.InitializeResponse | null | undefined): boolean {
  return init?.agentInfo?.name === HERMES_AGENT_NAME;
}

/**
 * Hermes denies a pending dangerous-command approval by itself after 60 s
 * (acp_adapter/permissions.py `make_approval_callback(timeout=60.0)`), without telling the
 * client (no `$/cancel_request`), and ACP cannot change it.
 */
export const HERMES_APPROVAL_TIMEOUT_MS = 60_000;

/**
 * When Pheby lets a Hermes approval expire: one second before Hermes's deadline, counted from when
 * the request reached Pheby, so an answer Pheby accepts still reaches Hermes in time.
 */
export const HERMES_APPROVAL_EXPIRES_MS = HERMES_APPROVAL_TIMEOUT_MS - 1_000;

/**
 * Hermes's timeout of one MCP tool call (tools/mcp_tool.py `_DEFAULT_TOOL_TIMEOUT`): an MCP server
 * passed over ACP has no way to set its own `timeout`.
 */
export const HERMES_MCP_TOOL_TIMEOUT_MS = 300_000;

/**
 * The command deleting a Hermes session: the agent's own command with `acp` replaced by
 * `sessions delete -y <id>` (`hermes acp` → `hermes sessions delete -y <id>`, also for
 * `python -m hermes_cli.main acp`), run with the agent's environment so it finds the same
 * `HERMES_HOME`. Null when the command does not end in `acp` (Pheby cannot tell how to run it).
 */
export function hermesDeleteCommand(agentCommand: readonly string[], sessionId: string): string[] | null {
  if (agentCommand.length < 2 || agentCommand.at(-1) !== "acp") return null;
  return [...agentCommand.slice(0, -1), "sessions", "delete", "-y", sessionId];
}

/** Run a short command to completion; rejects with its exit status and the end of its stderr. */
export function runCommand(
  argv: readonly string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number; user?: OsUser },
): Promise<void> {
  // The agent's own command: as the agent's user when it runs as one (its files are that user's).
  const as = options.user ? spawnAs(argv, options.user) : null;
  const [file, ...args] = as ? [as.file, ...as.args] : argv;
  return new Promise((resolve, reject) => {
    if (!file) {
      reject(new Error("no command"));
      return;
    }
    const child = spawn(file, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ["ignore", "ignore", "pipe"],
      ...(as ? { uid: as.uid, gid: as.gid } : {}),
    });
    let stderr = "";
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk: string) => {
      stderr = (stderr + chunk).slice(-500);
    });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`timed out after ${options.timeoutMs} ms`));
    }, options.timeoutMs);
    child.once("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else
        reject(
          new Error(`exited with ${signal ?? `code ${code}`}${stderr.trim() ? `: ${stderr.trim()}` : ""}`),
        );
    });
  });
}

/**
 * The extension notification upstream Hermes sends for background work that finished while the
 * session was idle (acp_adapter/background.py on Hermes's main branch; not in 0.19.0): process
 * completions, watch matches, async subagent results. `text` is what Hermes's CLI would inject
 * as the next turn; a client wanting that behaviour prompts the session with it and hands the
 * `notificationIds` back in that prompt's `_meta` so Hermes settles them.
 */
export const HERMES_NOTIFICATION_METHOD = "_hermes/notification";

/** `initialize` `clientCapabilities._meta`: asks Hermes for {@link HERMES_NOTIFICATION_METHOD}. */
export const HERMES_CLIENT_META = { "hermes.backgroundNotifications": 1 } as const;

/** The `session/prompt` `_meta` key that returns a notification's receipts. */
export const HERMES_NOTIFICATION_IDS_META = "hermes.notificationIds";

/** A parsed {@link HERMES_NOTIFICATION_METHOD}. */
export interface HermesNotification {
  sessionId: string;
  kind: string;
  title: string;
  text: string;
  notificationIds: string[];
}

/** Read a `_hermes/notification`'s params; null when they are not one (then it is ignored). */
export function parseHermesNotification(params: unknown): HermesNotification | null {
  const p = params as Partial<Record<keyof HermesNotification, unknown>> | null;
  if (!p || typeof p.sessionId !== "string" || typeof p.text !== "string" || !p.text.trim()) return null;
  const ids = Array.isArray(p.notificationIds)
    ? p.notificationIds.filter((id): id is string => typeof id === "string")
    : [];
  return {
    sessionId: p.sessionId,
    kind: typeof p.kind === "string" ? p.kind : "completion",
    title: typeof p.title === "string" ? p.title : "",
    text: p.text,
    notificationIds: ids,
  };
}

/** A legacy ACP model entry (`models.availableModels`). */
export interface LegacyModelInfo {
  modelId: string;
  name?: string | null;
  description?: string | null;
}

/** `provider:model`, the provider a slug (Hermes's `_encode_model_choice`). */
const PREFIXED = /^([a-z0-9][a-z0-9._-]*):(.+)$/i;
/** Hermes's model descriptions start with the provider's label: "Provider: OpenRouter • …". */
const PROVIDER_LABEL = /^Provider:\s*([^•]+?)\s*(?:•|$)/;

/**
 * Group legacy models whose every ID is `provider:model` (Hermes encodes its models so) by that
 * provider, named by the label Hermes puts in their descriptions. The model IDs stay whole: they
 * are what `session/set_model` takes. Null when some ID has no such prefix (one provider then).
 */
export function providersOfPrefixedModels(
  models: readonly LegacyModelInfo[],
): Array<{ slug: string; name: string; models: string[] }> | null {
  if (models.length === 0) return null;
  const providers: Array<{ slug: string; name: string; models: string[] }> = [];
  for (const m of models) {
    const slug = PREFIXED.exec(m.modelId)?.[1];
    if (!slug) return null;
    let provider = providers.find((p) => p.slug === slug);
    if (!provider) {
      const label = PROVIDER_LABEL.exec(m.description ?? "")?.[1];
      provider = { slug, name: label || slug, models: [] };
      providers.push(provider);
    }
    provider.models.push(m.modelId);
  }
  return providers;
}
