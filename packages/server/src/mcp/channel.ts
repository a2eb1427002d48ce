/**
 * The local channel between Pheby's stdio relay (the small program an agent without HTTP MCP
 * launches) and the running Pheby: one long-lived connection per relay on a Unix domain socket
 * that only Pheby's user can open. The relay sends its token as the first line; Pheby answers
 * {@link HELLO_OK} or `error <reason>`, and from then on the connection carries the agent's MCP
 * stdio stream unchanged (newline-delimited JSON-RPC), which Pheby serves itself.
 *
 * Imported by the relay: keep this module free of anything but constants.
 */

/** The MCP server's name as agents list it (their tool names become e.g. `mcp__pheby__ask_user`). */
export const MCP_SERVER_NAME = "pheby";

/** Environment variables Pheby sets for its stdio relay (in the ACP `mcpServers` entry). */
export const MCP_ENV = {
  socket: "PHEBY_MCP_SOCKET",
  token: "PHEBY_MCP_TOKEN",
} as const;

/** Pheby's answer to an accepted hello line; anything else is `error <reason>` and the end. */
export const HELLO_OK = "ok";

/** Longest hello line Pheby reads (a token is 64 hex characters). */
export const MAX_HELLO_BYTES = 256;

/** Largest MCP message Pheby reads on either route (a notify body of 64,000 characters fits several times). */
export const MAX_REQUEST_BYTES = 1024 * 1024;
