/**
 * The ACP side of Pheby's MCP server (its tools for agents).
 *
 * Which session an MCP tool call comes from: an agent's one MCP server process may serve all its
 * sessions (Hermes registers ACP-provided servers process-wide by name, OpenCode per working
 * directory, Qwen Code pools them), so the server process cannot say. It is the session running a
 * turn, and when several are, the one whose turn shows an open tool call of that tool with those
 * arguments (agents report a call over ACP around the time they make it, so the caller waits a
 * little for that report).
 */
import type * as acp from "@agentclientprotocol/sdk";
import { HERMES_AGENT_NAME, HERMES_MCP_TOOL_TIMEOUT_MS } from "./hermes.js";
import { type AcpState, drain } from "./state.js";

/** A session with a running turn, and the tool calls its turn has shown. */
export interface TurnInProgress {
  sessionId: string;
  tools: ReadonlyArray<{ name: string; args: Record<string, unknown> | undefined; ended: boolean }>;
}

/** The session an MCP call of `tool` with `args` belongs to, or null when it cannot be told. */
export function callerOf(
  turns: readonly TurnInProgress[],
  call: { tool: string; args: Record<string, unknown> },
): string | null {
  if (turns.length === 1) return turns[0]!.sessionId;
  const wanted = canonical(call.args);
  const open = (turn: TurnInProgress, sameArgs: boolean) =>
    turn.tools.some(
      (t) =>
        !t.ended &&
        t.name.includes(call.tool) &&
        (!sameArgs || t.args === undefined || canonical(t.args) === wanted),
    );
  // The same tool with the same arguments first; an agent that reports other arguments (or
  // none) is matched by the tool alone. Either way only a single match counts.
  for (const sameArgs of [true, false]) {
    const matching = turns.filter((turn) => open(turn, sameArgs));
    if (matching.length === 1) return matching[0]!.sessionId;
    if (matching.length > 1) return null;
  }
  return null;
}

/** JSON with sorted keys, so argument objects compare by value. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b)),
        )
      : v,
  );
}

/** How long a call waits for the ACP updates that tell concurrent turns apart. */
const CALLER_WAIT_MS = 2_000;
const CALLER_POLL_MS = 50;

/**
 * The session of `proc` an MCP call of Pheby's tools comes from, or null when it cannot be told
 * (no turn is running, or several are and none shows the call).
 */
export async function sessionOf(
  state: AcpState,
  isProcess: (openIn: unknown) => boolean,
  call: { tool: string; args: Record<string, unknown> },
): Promise<string | null> {
  const deadline = Date.now() + CALLER_WAIT_MS;
  for (;;) {
    // A turn given up on (cancelled, the agent not stopping) answers no one: not a caller.
    const running = [...state.sessions.values()].filter(
      (s) => s.turn && !s.turn.abandoned && isProcess(s.openIn),
    );
    const caller = callerOf(
      running.map((s) => ({ sessionId: s.id, tools: s.turn!.calls() })),
      call,
    );
    if (caller !== null || running.length < 2 || Date.now() >= deadline) return caller;
    await Promise.all(running.map(drain));
    await new Promise((resolve) => setTimeout(resolve, CALLER_POLL_MS));
  }
}

/** Pheby's tool names as agents name them: `mcp__pheby__ask_user` (Hermes, Qwen Code, Claude Code), `pheby_ask_user` (OpenCode). */
const PHEBY_TOOL = /^(?:mcp__pheby__|pheby_)([a-z_]+)$/;

/**
 * The Pheby tool (one of `names`) a tool call or permission request is about, from its name,
 * title or `_meta` tool name (Qwen Code: `_meta.toolName`; Claude Code: `_meta.claudeCode.toolName`).
 */
export function phebyToolOf(
  call: Pick<acp.ToolCallUpdate, "title" | "_meta">,
  names: readonly string[],
): string | null {
  const meta = (call._meta ?? {}) as Record<string, unknown>;
  const candidates = [
    call.title,
    meta.toolName,
    ...Object.values(meta).map((v) => (v as { toolName?: unknown } | null)?.toolName),
  ];
  for (const candidate of candidates) {
    const tool = typeof candidate === "string" ? PHEBY_TOOL.exec(candidate)?.[1] : undefined;
    if (tool && names.includes(tool)) return tool;
  }
  return null;
}

/**
 * An agent's own timeout of one MCP tool call, where it is known and ACP cannot change it:
 * Hermes 300 s (tools/mcp_tool.py), Codex 60 s (its `tool_timeout_sec` default). Qwen Code and
 * Gemini CLI wait 10 minutes, OpenCode and Claude Code effectively without limit.
 */
export function mcpToolTimeoutMs(agentName: string): number | undefined {
  if (agentName === HERMES_AGENT_NAME) return HERMES_MCP_TOOL_TIMEOUT_MS;
  if (agentName === "codex-acp") return 60_000;
  return undefined;
}

/**
 * Agents that declare `mcpCapabilities.http` but did not reach Pheby's tools over it in
 * `test:agents`: Qwen Code 0.24.4 (its calls never arrived; not yet understood). They keep the relay.
 */
const HTTP_MCP_UNPROVEN = new Set(["qwen-code"]);

/** Whether Pheby hands this agent its HTTP MCP server (it declares `mcpCapabilities.http`), not the relay. */
export function takesHttpMcp(init: acp.InitializeResponse): boolean {
  return (
    init.agentCapabilities?.mcpCapabilities?.http === true &&
    !HTTP_MCP_UNPROVEN.has(init.agentInfo?.name ?? "")
  );
}
