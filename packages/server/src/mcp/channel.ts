/**
 * The local channel between Pheby's MCP server (a process the agent launches) and the running
 * Pheby: one connection per tool call on a Unix domain socket that only Pheby's user can open,
 * one JSON line each way. The call carries the token Pheby gave that agent process; the shared
 * secret never leaves Pheby. Closing the connection before the answer cancels the call.
 */
import { createConnection } from "node:net";

/** The MCP server's name as agents list it (their tool names become e.g. `mcp__pheby__ask_user`). */
export const MCP_SERVER_NAME = "pheby";

/** Environment variables Pheby sets for its MCP server (in the ACP `mcpServers` entry). */
export const MCP_ENV = {
  socket: "PHEBY_MCP_SOCKET",
  token: "PHEBY_MCP_TOKEN",
  tools: "PHEBY_MCP_TOOLS",
  askTimeoutSeconds: "PHEBY_MCP_ASK_TIMEOUT_SECONDS",
  timezone: "PHEBY_MCP_TIMEZONE",
} as const;

/** One tool call, as sent on the socket. */
export interface ChannelRequest {
  token: string;
  tool: string;
  arguments: unknown;
}

/** Pheby's answer: the tool result's text, or why the call failed. */
export type ChannelResponse = { ok: true; text: string } | { ok: false; error: string };

/** Longest request line Pheby reads (a notify body of 64,000 characters fits several times). */
export const MAX_REQUEST_BYTES = 1024 * 1024;

/**
 * Call a tool in the running Pheby. Never throws: an unreachable Pheby or a broken answer is an
 * `ok: false` response the agent can read. Aborting `signal` closes the connection (Pheby then
 * withdraws what the call was waiting for, e.g. the question on the phone).
 */
export function callPheby(
  socketPath: string,
  request: ChannelRequest,
  signal?: AbortSignal,
): Promise<ChannelResponse> {
  return new Promise((resolve) => {
    let answer = "";
    let settled = false;
    const done = (response: ChannelResponse) => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener("abort", onAbort);
      socket.destroy();
      resolve(response);
    };
    const onAbort = () => done({ ok: false, error: "The call was cancelled." });
    const socket = createConnection(socketPath);
    socket.setEncoding("utf8");
    socket.on("connect", () => socket.write(`${JSON.stringify(request)}\n`));
    socket.on("data", (chunk: string) => {
      answer += chunk;
      const nl = answer.indexOf("\n");
      if (nl >= 0) done(parseResponse(answer.slice(0, nl)));
    });
    socket.on("error", (err: NodeJS.ErrnoException) =>
      done({ ok: false, error: `Pheby is not reachable (${err.code ?? err.message}).` }),
    );
    socket.on("close", () => done({ ok: false, error: "Pheby closed the connection without an answer." }));
    if (signal?.aborted) onAbort();
    else signal?.addEventListener("abort", onAbort, { once: true });
  });
}

function parseResponse(line: string): ChannelResponse {
  try {
    const value = JSON.parse(line) as Partial<{ ok: unknown; text: unknown; error: unknown }>;
    if (value.ok === true && typeof value.text === "string") return { ok: true, text: value.text };
    if (value.ok === false && typeof value.error === "string") return { ok: false, error: value.error };
  } catch {
    // falls through
  }
  return { ok: false, error: "Pheby sent an answer this server does not understand." };
}
