/**
 * Pheby's MCP server, inside Pheby's process: one SDK `McpServer` per MCP connection of an agent
 * process (a relay's socket, or an HTTP MCP session), both routes describing and running the
 * tools the same way. A call runs in the conversation its grant says it belongs to.
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { ZodRawShape } from "zod/v3";
import { MCP_SERVER_NAME } from "./channel.js";
import { type AgentToolName, TOOL_INPUTS, toolDescription } from "./tools.js";

/** A checked tool call, to run in its conversation. */
export interface ToolCall {
  conversationId: string;
  tool: AgentToolName;
  args: Record<string, unknown>;
  /** Aborted when the agent gives up on the call (cancels it, or its connection closes) or Pheby shuts down. */
  signal: AbortSignal;
  /** The agent's own timeout of one MCP tool call, when its grant knew it. */
  toolTimeoutMs: number | undefined;
}

/** A tool's result text; `isError` marks a failure the agent should read as one. */
export interface ToolResult {
  text: string;
  isError?: boolean;
}

/** A refusal meant for the agent (its message is the tool's error text). */
export class ToolError extends Error {
  override readonly name = "ToolError";
}

/** One agent process's permission to call, and how its calls map to conversations. */
export interface McpGrant {
  /** The agent's name (ACP `agentInfo.name`), if known, for logs. */
  agent?: string;
  /** The agent's own timeout of one MCP tool call, when known. */
  toolTimeoutMs?: number;
  /** The conversation a call belongs to, or null when it cannot be told (e.g. outside any turn). */
  conversationOf(call: { tool: AgentToolName; args: Record<string, unknown> }): Promise<string | null>;
}

/** What every connection's server shares. */
export interface ToolServerOptions {
  /** The tools offered (others are unknown to the agent's MCP client). */
  tools: readonly AgentToolName[];
  /** Seconds `ask_user` waits (told to the model in the tool's description). */
  askTimeoutSeconds: number;
  /** The default time zone of schedules (told to the model). */
  timezone: string;
  /** Run a checked call. A {@link ToolError} becomes the agent's error text. */
  run(call: ToolCall): Promise<ToolResult>;
  log: { error(obj: object, msg?: string): void };
}

const INSTRUCTIONS =
  "Tools of Pheby, the phone app the user talks to you through: ask the user a question, schedule prompts for later, notify the user, send them a file.";

/** A fresh MCP server for one connection of `grant`'s agent process (the SDK checks each call's arguments against the tool's schema). */
export function toolServer(options: ToolServerOptions, grant: McpGrant): McpServer {
  const server = new McpServer(
    { name: MCP_SERVER_NAME, title: "Pheby", version: "1" },
    { instructions: INSTRUCTIONS },
  );
  for (const tool of options.tools) {
    server.registerTool(
      tool,
      { description: toolDescription(tool, options), inputSchema: TOOL_INPUTS[tool] as ZodRawShape },
      async (args: Record<string, unknown>, extra: { signal: AbortSignal }) => {
        const result = await runTool(options, grant, tool, args, extra.signal);
        return {
          content: [{ type: "text" as const, text: result.text }],
          ...(result.isError ? { isError: true } : {}),
        };
      },
    );
  }
  return server;
}

/**
 * Run one call of `grant`'s whose arguments were checked, in the conversation the grant names:
 * both routes' MCP servers and {@link McpBridge.call} (the in-process simulator) come here, so a
 * tool behaves the same whoever calls it. A refusal is `isError`, never a throw.
 */
export async function runTool(
  options: ToolServerOptions,
  grant: McpGrant,
  tool: AgentToolName,
  args: Record<string, unknown>,
  signal: AbortSignal,
): Promise<ToolResult> {
  try {
    const conversationId = await grant.conversationOf({ tool, args });
    if (conversationId === null) {
      throw new ToolError(
        "Pheby cannot tell which conversation this call belongs to: its tools work while you answer a message in a Pheby conversation.",
      );
    }
    const result = await options.run({
      conversationId,
      tool,
      args,
      signal,
      toolTimeoutMs: grant.toolTimeoutMs,
    });
    return result.isError === true ? { text: result.text, isError: true } : { text: result.text };
  } catch (err) {
    if (err instanceof ToolError) return { text: err.message, isError: true };
    options.log.error({ err, tool, agent: grant.agent }, "agent tool failed");
    return { text: "Pheby failed to run this tool.", isError: true };
  }
}
