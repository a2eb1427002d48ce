/**
 * Pheby's stdio relay: the program an agent without HTTP MCP launches because Pheby lists it in
 * ACP `session/new|load|resume` `mcpServers`. It knows nothing of MCP: it connects to the running
 * Pheby's Unix socket, presents the token from its environment, and then pipes its stdin to the
 * socket and the socket to its stdout, byte for byte. Pheby serves the MCP protocol itself, so
 * this process loads no SDK and costs little more than a bare Node.js (docs/performance.md).
 *
 * Built as its own entry (`dist/mcp.js`) of `@pheby/server`, started as `node dist/mcp.js`.
 */
import { createConnection } from "node:net";
import { HELLO_OK, MAX_HELLO_BYTES, MCP_ENV } from "./channel.js";

function fail(message: string, code = 2): never {
  process.stderr.write(`pheby-mcp: ${message}\n`);
  process.exit(code);
}

const socketPath = process.env[MCP_ENV.socket];
const token = process.env[MCP_ENV.token];
if (!socketPath || !token) fail(`${MCP_ENV.socket} and ${MCP_ENV.token} must be set (Pheby sets them)`);

const socket = createConnection(socketPath);
socket.on("connect", () => socket.write(`${token}\n`));
socket.on("error", (err: NodeJS.ErrnoException) =>
  fail(`Pheby is not reachable (${err.code ?? err.message})`, 1),
);

// Pheby's one-line answer first; then the MCP stream in both directions.
let head = Buffer.alloc(0);
const onHello = (chunk: Buffer) => {
  head = Buffer.concat([head, chunk]);
  const nl = head.indexOf(0x0a);
  if (nl < 0) {
    if (head.length > MAX_HELLO_BYTES) fail("Pheby sent an answer this relay does not understand");
    return;
  }
  const answer = head.subarray(0, nl).toString("utf8");
  if (answer !== HELLO_OK) fail(answer.replace(/^error /, ""));
  socket.off("data", onHello);
  const rest = head.subarray(nl + 1);
  if (rest.length > 0) process.stdout.write(rest);
  socket.pipe(process.stdout);
  process.stdin.pipe(socket);
};
socket.on("data", onHello);
// The agent closing our stdin ends the session (the socket is then ended by the pipe): not a failure.
let stdinEnded = false;
process.stdin.once("end", () => {
  stdinEnded = true;
});
socket.on("end", () => (stdinEnded ? process.exit(0) : fail("Pheby closed the connection", 1)));
