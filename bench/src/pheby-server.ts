// The real @pheby/server (simulator backend) on an ephemeral port, for benchmarks.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPhebyServer } from "@pheby/server";

const server = createPhebyServer({
  secret: process.env.BENCH_SECRET ?? "bench-secret-0123456789",
  dataDir: process.env.BENCH_DATA_DIR ?? mkdtempSync(join(tmpdir(), "pheby-bench-")),
  ...(process.env.BENCH_ALLOWED_ROOT ? { allowedFileRoots: [process.env.BENCH_ALLOWED_ROOT] } : {}),
});
const { port } = await server.listen({ port: 0, host: "127.0.0.1" });
console.log(`PORT ${port}`);
process.on("SIGTERM", () => server.close().then(() => process.exit(0)));
