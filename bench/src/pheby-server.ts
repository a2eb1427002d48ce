// The real @pheby/server on an ephemeral port, for benchmarks. The simulator
// backend by default; BENCH_AGENT=paced runs the ACP backend against
// paced-agent.ts as a real child process. BENCH_DELTA_MS, BENCH_COMPRESSION=0,
// BENCH_MAX_BUFFERED, BENCH_HEARTBEAT_MS, BENCH_RESUME=0 and BENCH_THIN=0 (every v1 delta, as before thinning) override the server's defaults; BENCH_PUSH_PRIVATE=1 lets
// push endpoints live on loopback (the push benchmark's receiver). BENCH_WORKDIR=<dir> runs the simulator
// working in that directory (the changes benchmark's repository, read by the `changes` extension).
import "./child-stats.js";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createAcpBackend, createPhebyServer, createSimulatorBackend } from "@pheby/server";

const env = process.env;
const agent =
  env.BENCH_AGENT === "paced"
    ? createAcpBackend({
        command: [
          process.execPath,
          "--import",
          "tsx",
          fileURLToPath(new URL("./paced-agent.ts", import.meta.url)),
        ],
        // The bench package's directory, so `--import tsx` resolves.
        cwd: fileURLToPath(new URL("..", import.meta.url)),
        env: env.BENCH_TIMELINE ? { BENCH_TIMELINE: env.BENCH_TIMELINE } : {},
        allowedFileRoots: [],
      })
    : env.BENCH_WORKDIR
      ? { ...createSimulatorBackend(), workdir: () => env.BENCH_WORKDIR }
      : undefined;
const server = createPhebyServer({
  secret: env.BENCH_SECRET ?? "bench-secret-0123456789",
  dataDir: env.BENCH_DATA_DIR ?? mkdtempSync(join(tmpdir(), "pheby-bench-")),
  ...(agent ? { agent } : {}),
  ...(env.BENCH_ALLOWED_ROOT ? { allowedFileRoots: [env.BENCH_ALLOWED_ROOT] } : {}),
  ...(env.BENCH_DELTA_MS ? { deltaIntervalMs: Number(env.BENCH_DELTA_MS) } : {}),
  ...(env.BENCH_COMPRESSION === "0" ? { compression: false } : {}),
  ...(env.BENCH_MAX_BUFFERED ? { maxBufferedBytes: Number(env.BENCH_MAX_BUFFERED) } : {}),
  ...(env.BENCH_HEARTBEAT_MS ? { heartbeatIntervalMs: Number(env.BENCH_HEARTBEAT_MS) } : {}),
  ...(env.BENCH_RESUME === "0" ? { resume: false } : {}),
  ...(env.BENCH_THIN === "0" ? { thinV1Deltas: false } : {}),
  ...(env.BENCH_PUSH_PRIVATE === "1" ? { push: { allowPrivate: true } } : {}),
});
const { port } = await server.listen({ port: 0, host: "127.0.0.1" });
console.log(`PORT ${port}`);
process.on("SIGTERM", () => server.close().then(() => process.exit(0)));
