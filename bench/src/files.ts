// 64 MiB upload and download through the real Pheby server and through a
// bare node:http handler that pipes to/from a file, with the same client code
// in the same run. The server's RSS is sampled from /proc while each transfer
// runs: its growth must stay far below the file size, which shows streaming.
import { createReadStream, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import WebSocket from "ws";
import { median, type Spawned, spawnServer, table } from "./harness.js";

const SIZE = Number(process.env.BENCH_FILE_MIB ?? 64) * 1024 * 1024;
const RUNS = Number(process.env.BENCH_FILE_RUNS ?? 3);
const SECRET = "bench-secret-0123456789";
const MB = 1_000_000;

interface Target {
  upload: string;
  download(id: string): string;
  headers: Record<string, string>;
}

/** Run `transfer` while sampling the server's RSS; returns seconds and the peak RSS. */
async function measured(server: Spawned, transfer: () => Promise<void>) {
  let peak = server.rss();
  const sampler = setInterval(() => {
    peak = Math.max(peak, server.rss());
  }, 5);
  const began = performance.now();
  await transfer();
  const seconds = (performance.now() - began) / 1000;
  clearInterval(sampler);
  peak = Math.max(peak, server.rss());
  return { seconds, peak };
}

function upload(port: number, target: Target, file: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        method: "POST",
        path: target.upload,
        headers: { ...target.headers, "content-type": "application/octet-stream", "content-length": SIZE },
      },
      (res) => {
        let body = "";
        res.on("data", (c) => (body += c));
        res.on("end", () => {
          if (res.statusCode !== 201) return reject(new Error(`upload: HTTP ${res.statusCode} ${body}`));
          const json = JSON.parse(body) as { id?: string; attachment?: { attachment_id: string } };
          resolve(json.attachment?.attachment_id ?? json.id ?? "");
        });
      },
    );
    req.on("error", reject);
    createReadStream(file).pipe(req);
  });
}

function download(port: number, target: Target, id: string): Promise<void> {
  return new Promise((resolve, reject) => {
    request({ host: "127.0.0.1", port, path: target.download(id), headers: target.headers }, (res) => {
      let n = 0;
      res.on("data", (c: Buffer) => (n += c.length));
      res.on("end", () => (n === SIZE ? resolve() : reject(new Error(`download: ${n} bytes`))));
    })
      .on("error", reject)
      .end();
  });
}

/** A conversation on the Pheby server to upload into. */
async function conversation(port: number): Promise<string> {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`);
  await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
  const next = () =>
    new Promise<Record<string, string>>((r) => ws.once("message", (d) => r(JSON.parse(String(d)))));
  ws.send(JSON.stringify({ type: "hello", secret: SECRET, protocol_version: 1 }));
  await next();
  ws.send(JSON.stringify({ type: "conversation.create", request_id: "c" }));
  const created = await next();
  ws.close();
  return created.conversation_id!;
}

const dir = mkdtempSync(join(tmpdir(), "pheby-bench-files-"));
const file = join(dir, "64mib.bin");
writeFileSync(file, Buffer.alloc(SIZE, 0x5a));

const rows: Record<string, string | number>[] = [];
const summary: Record<string, { up: number; down: number }> = {};
for (const [name, script] of [
  ["bare node:http (pipe to/from file)", "./bare-file-server.ts"],
  ["@pheby/server", "./pheby-server.ts"],
] as const) {
  const server = await spawnServer(script, { BENCH_DATA_DIR: mkdtempSync(join(dir, "data-")) });
  try {
    const target: Target =
      script === "./pheby-server.ts"
        ? {
            upload: `/attachments?conversation_id=${await conversation(server.port)}&filename=64mib.bin`,
            download: (id) => `/attachments/${id}`,
            headers: { authorization: `Bearer ${SECRET}` },
          }
        : { upload: "/upload", download: (id) => `/download/${id}`, headers: {} };
    // Growth is measured against the idle server before its first transfer: a warm-up would let a
    // server that buffers whole bodies reuse memory it had already grown into, and hide it.
    const idle = server.rss();
    const up: number[] = [];
    const down: number[] = [];
    let upGrowth = 0;
    let downGrowth = 0;
    for (let i = 0; i < RUNS; i++) {
      let id = "";
      const u = await measured(server, async () => {
        id = await upload(server.port, target, file);
      });
      const d = await measured(server, () => download(server.port, target, id));
      up.push(SIZE / MB / u.seconds);
      down.push(SIZE / MB / d.seconds);
      upGrowth = Math.max(upGrowth, u.peak - idle);
      downGrowth = Math.max(downGrowth, d.peak - idle);
    }
    summary[name] = { up: median(up), down: median(down) };
    rows.push({
      server: name,
      "upload MB/s": median(up).toFixed(0),
      "download MB/s": median(down).toFixed(0),
      "peak RSS growth, uploads (MiB)": (upGrowth / 2 ** 20).toFixed(1),
      "peak RSS growth, uploads + downloads (MiB)": (Math.max(upGrowth, downGrowth) / 2 ** 20).toFixed(1),
    });
  } finally {
    await server.stop();
  }
}
const [bare, pheby] = Object.values(summary) as [{ up: number; down: number }, { up: number; down: number }];
rows.push({
  server: "ratio (pheby / bare)",
  "upload MB/s": (pheby.up / bare.up).toFixed(2),
  "download MB/s": (pheby.down / bare.down).toFixed(2),
  "peak RSS growth, uploads (MiB)": "",
  "peak RSS growth, uploads + downloads (MiB)": "",
});
console.log(`\n${SIZE / 2 ** 20} MiB upload + download, median of ${RUNS} runs each\n`);
table(rows);
rmSync(dir, { recursive: true, force: true });
