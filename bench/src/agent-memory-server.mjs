// The real @pheby/server for the agent-memory benchmark, in plain JavaScript so its process holds
// no TypeScript loader: the ACP backend with the agent command in BENCH_AGENT_COMMAND (JSON argv;
// its env in BENCH_AGENT_ENV, its cwd BENCH_AGENT_CWD), or the simulator (no agent process) without
// it. Pheby's tools are on with their defaults, so an agent without HTTP MCP launches the built
// relay (`node dist/mcp.js`).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createAcpBackend, createPhebyServer } from "@pheby/server";

const env = process.env;
const dataDir = mkdtempSync(join(tmpdir(), "pheby-bench-memory-"));
const agent = env.BENCH_AGENT_COMMAND
  ? createAcpBackend({
      command: JSON.parse(env.BENCH_AGENT_COMMAND),
      cwd: env.BENCH_AGENT_CWD ?? dataDir,
      env: JSON.parse(env.BENCH_AGENT_ENV ?? "{}"),
      allowedFileRoots: [],
    })
  : undefined;
const server = createPhebyServer({ secret: env.BENCH_SECRET, dataDir, ...(agent ? { agent } : {}) });
const { port } = await server.listen({ port: 0, host: "127.0.0.1" });
console.log(`PORT ${port}`);
process.on("SIGTERM", () => server.close().then(() => process.exit(0)));
