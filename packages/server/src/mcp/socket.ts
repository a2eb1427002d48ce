/**
 * The stdio route, Pheby's end: a relay's connection on the Unix socket presents its token in a
 * hello line (channel.ts); once accepted, the rest of the connection is the agent's MCP stdio
 * stream, served by a {@link toolServer} of the relay's grant. Revoking the grant closes it.
 */
import type { Socket } from "node:net";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { retryAfter } from "../auth/lockout.js";
import { HELLO_OK, MAX_HELLO_BYTES, MAX_REQUEST_BYTES } from "./channel.js";
import type { Grants } from "./grants.js";
import { type ToolServerOptions, toolServer } from "./tool-server.js";

/** A hello line must arrive this soon after connecting. */
const HELLO_TIMEOUT_MS = 10_000;
/** The lockout key of the socket's peers, which have no address. */
export const SOCKET_SOURCE = "unix-socket";

/** What a relay connection needs. */
export interface RelayDeps {
  grants: Grants;
  server: ToolServerOptions;
  log: { debug(obj: object, msg?: string): void; warn(obj: object, msg?: string): void };
}

/** Serve one connection on the socket. */
export function acceptRelay(socket: Socket, deps: RelayDeps): void {
  socket.on("error", (err) => deps.log.debug({ err: err.message }, "mcp relay socket error"));
  const refuse = (reason: string) => {
    if (!socket.destroyed) socket.end(`error ${reason}\n`);
  };
  const timer = setTimeout(() => refuse("No hello."), HELLO_TIMEOUT_MS);
  timer.unref();
  let head = Buffer.alloc(0);
  const onData = (chunk: Buffer) => {
    head = Buffer.concat([head, chunk]);
    const nl = head.indexOf(0x0a);
    if (nl < 0 && head.length <= MAX_HELLO_BYTES) return;
    socket.off("data", onData);
    socket.pause();
    clearTimeout(timer);
    if (nl < 0 || nl > MAX_HELLO_BYTES) {
      refuse("The hello is too large.");
      return;
    }
    const auth = deps.grants.authorize(SOCKET_SOURCE, head.subarray(0, nl).toString("utf8"));
    if (!auth.ok) {
      if (auth.reason === "unauthorized") deps.log.warn({}, "mcp relay with an unknown token refused");
      refuse(
        auth.reason === "locked"
          ? `Too many failed attempts; ${retryAfter(auth.remainingMs)}`
          : "Not authorized.",
      );
      return;
    }
    const rest = head.subarray(nl + 1);
    if (rest.length > 0) socket.unshift(rest);
    socket.write(`${HELLO_OK}\n`);
    const server = toolServer(deps.server, auth.grant);
    const transport = new StdioServerTransport(socket, socket, { maxBufferSize: MAX_REQUEST_BYTES });
    // The SDK's stdio transport does not watch its stream end: a closed socket closes the server,
    // which aborts the calls still running (a question on the phone is withdrawn).
    const close = () => {
      auth.grant.revoked.removeEventListener("abort", close);
      socket.destroy();
      void server.close();
    };
    transport.onclose = () => socket.destroy();
    socket.once("close", close);
    auth.grant.revoked.addEventListener("abort", close, { once: true });
    void server.connect(transport).then(() => socket.resume());
  };
  socket.on("data", onData);
}
