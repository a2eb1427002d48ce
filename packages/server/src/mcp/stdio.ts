/**
 * Pheby's MCP server: a stdio MCP server (the official MCP TypeScript SDK) that the agent
 * launches because Pheby lists it in ACP `session/new|load|resume` `mcpServers`. It holds no
 * state and no secret of Pheby's: each tool call is forwarded over the local channel with the
 * token from its environment, and Pheby acts in the conversation the call belongs to.
 *
 * Built as its own entry (`dist/mcp.js`) of `@pheby/server`, started as `node dist/mcp.js`.
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import type { ZodRawShape } from "zod/v3";
import { callPheby, MCP_ENV, MCP_SERVER_NAME } from "./channel.js";
import {
  AGENT_TOOL_NAMES,
  type AgentToolName,
  isAgentToolName,
  TOOL_INPUTS,
  toolDescription,
} from "./tools.js";

function fail(message: string): never {
  process.stderr.write(`pheby-mcp: ${message}\n`);
  process.exit(2);
}

async function main(): Promise<void> {
  const socketPath = process.env[MCP_ENV.socket];
  const token = process.env[MCP_ENV.token];
  if (!socketPath || !token) fail(`${MCP_ENV.socket} and ${MCP_ENV.token} must be set (Pheby sets them)`);
  const listed = process.env[MCP_ENV.tools];
  const names = listed === undefined ? [...AGENT_TOOL_NAMES] : listed.split(",").filter(Boolean);
  const unknown = names.filter((n) => !isAgentToolName(n));
  if (unknown.length > 0) fail(`unknown tools in ${MCP_ENV.tools}: ${unknown.join(", ")}`);
  const env = {
    askTimeoutSeconds: Number(process.env[MCP_ENV.askTimeoutSeconds] ?? 240),
    timezone: process.env[MCP_ENV.timezone] ?? "UTC",
  };

  const server = new McpServer(
    { name: MCP_SERVER_NAME, title: "Pheby", version: "1" },
    {
      instructions:
        "Tools of Pheby, the phone app the user talks to you through: ask the user a question, schedule prompts for later, notify the user, send them a file.",
    },
  );
  for (const name of names as AgentToolName[]) {
    server.registerTool(
      name,
      { description: toolDescription(name, env), inputSchema: TOOL_INPUTS[name] as ZodRawShape },
      async (args: Record<string, unknown>, extra: { signal: AbortSignal }) => {
        const response = await callPheby(socketPath, { token, tool: name, arguments: args }, extra.signal);
        return response.ok
          ? { content: [{ type: "text" as const, text: response.text }] }
          : { content: [{ type: "text" as const, text: response.error }], isError: true };
      },
    );
  }
  await server.connect(new StdioServerTransport());
}

main().catch((err: unknown) => fail(err instanceof Error ? err.message : String(err)));
