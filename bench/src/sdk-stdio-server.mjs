// The agent-memory benchmark's "before" baseline: a stdio MCP server on the MCP SDK offering
// Pheby's six tools (the shape of the per-agent-process server Pheby launched before its relay),
// answering every call with an empty list. Plain JavaScript, so no TypeScript loader counts.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod/v3";

const server = new McpServer({ name: "pheby", version: "1" });
const tools = ["ask_user", "schedule_create", "schedule_list", "schedule_delete", "notify_user", "send_file"];
for (const name of tools) {
  server.registerTool(
    name,
    { description: `Pheby's ${name}`, inputSchema: { text: z.string().min(1).max(4000).optional() } },
    async () => ({ content: [{ type: "text", text: "[]" }] }),
  );
}
await server.connect(new StdioServerTransport());
