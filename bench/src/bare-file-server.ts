// Baseline: a bare node:http handler that pipes an upload to a file and a
// file to a download, with nothing else (no auth, no limits, no fsync, no index).
import { createReadStream, createWriteStream, mkdtempSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";

const dir = mkdtempSync(join(tmpdir(), "pheby-bench-bare-"));
let n = 0;
const server = createServer((req, res) => {
  if (req.method === "POST") {
    const path = join(dir, String(++n));
    pipeline(req, createWriteStream(path)).then(
      () => res.writeHead(201, { "content-type": "application/json" }).end(JSON.stringify({ id: String(n) })),
      () => res.writeHead(500).end(),
    );
    return;
  }
  const id = (req.url ?? "").split("/").pop() ?? "";
  res.writeHead(200, { "content-type": "application/octet-stream" });
  pipeline(createReadStream(join(dir, id)), res).catch(() => {});
});
server.listen(0, "127.0.0.1", () => console.log(`PORT ${(server.address() as AddressInfo).port}`));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
