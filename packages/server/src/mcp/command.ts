import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

/**
 * The argv that starts Pheby's MCP server: this Node.js and `mcp.js`, built next to the
 * package's `index.js`. Throws when the build has no such file (running from sources: pass the
 * command yourself, e.g. with tsx, as the tests do).
 */
export function mcpServerCommand(): string[] {
  const entry = fileURLToPath(new URL("./mcp.js", import.meta.url));
  if (!existsSync(entry)) {
    throw new Error(`Pheby's MCP server is not built (${entry} is missing): build @pheby/server`);
  }
  return [process.execPath, entry];
}
