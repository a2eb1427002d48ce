// The real @pheby/server for the agent-memory benchmark: the ACP backend with the agent command in
// BENCH_AGENT_COMMAND (JSON argv; its env in BENCH_AGENT_ENV, its cwd BENCH_AGENT_CWD), or the
// simulator (no agent process) without it. Pheby's tools are on with their defaults, so an agent
// without HTTP MCP launches the built relay (`node dist/mcp.js`).
import "./child-stats.js";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createAcpBackend, createPhebyServer } from "@pheby/server";
import { SECRET } from "./client.js";

const env = process.env;
const dataDir = env.BENCH_DATA_DIR ?? mkdtempSync(join(tmpdir(), "pheby-bench-memory-"));
const agent = env.BENCH_AGENT_COMMAND
  ? createAcpBackend({
      command: JSON.parse(env.BENCH_AGENT_COMMAND) as string[],
      cwd: env.BENCH_AGENT_CWD ?? dataDir,
      env: JSON.parse(env.BENCH_AGENT_ENV ?? "{}") as Record<string, string>,
      allowedFileRoots: [],
    })
  : undefined;
const server = createPhebyServer({ secret: SECRET, dataDir, ...(agent ? { agent } : {}) });
const { port } = await server.listen({ port: 0, host: "127.0.0.1" });
console.log(`PORT ${port}`);
process.on("SIGTERM", () => server.close().then(() => process.exit(0)));
