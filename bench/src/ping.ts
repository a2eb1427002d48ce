// Authenticated ping→pong round trips: many connections, many requests in
// flight, against the real Pheby server and a bare ws JSON echo baseline,
// driven by the same client code in the same run.
import WebSocket from "ws";
import { percentile, spawnServer, table } from "./harness.js";

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const IN_FLIGHT = Number(process.env.BENCH_IN_FLIGHT ?? 8);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const WARMUP_SECONDS = 1;
const SECRET = "bench-secret-0123456789";

interface Result {
  server: string;
  requests: number;
  throughput: number;
  p50: number;
  p99: number;
}

async function connect(port: number): Promise<WebSocket> {
  const socket = new WebSocket(`ws://127.0.0.1:${port}/ws`);
  await new Promise<void>((resolve, reject) => {
    socket.once("open", () => resolve());
    socket.once("error", reject);
  });
  socket.send(JSON.stringify({ type: "hello", secret: SECRET, protocol_version: 1, request_id: "h" }));
  await new Promise<void>((resolve, reject) =>
    socket.once("message", (data) => {
      const frame = JSON.parse(String(data));
      frame.type === "ready" ? resolve() : reject(new Error(`handshake failed: ${String(data)}`));
    }),
  );
  return socket;
}

async function measure(name: string, port: number): Promise<Result> {
  const sockets = await Promise.all(Array.from({ length: CONNECTIONS }, () => connect(port)));
  const latencies: number[] = [];
  let recording = false;
  let running = true;
  let next = 0;
  for (const socket of sockets) {
    const sentAt = new Map<string, number>();
    const fire = () => {
      const id = String(next++);
      sentAt.set(id, performance.now());
      socket.send(JSON.stringify({ type: "ping", request_id: id }));
    };
    socket.on("message", (data) => {
      const { request_id } = JSON.parse(String(data)) as { request_id: string };
      const start = sentAt.get(request_id);
      sentAt.delete(request_id);
      if (start !== undefined && recording) latencies.push(performance.now() - start);
      if (running) fire();
    });
    for (let i = 0; i < IN_FLIGHT; i++) fire();
  }
  await new Promise((r) => setTimeout(r, WARMUP_SECONDS * 1000));
  recording = true;
  const began = performance.now();
  await new Promise((r) => setTimeout(r, SECONDS * 1000));
  recording = false;
  const elapsed = (performance.now() - began) / 1000;
  running = false;
  for (const s of sockets) s.terminate();
  const sorted = latencies.slice().sort((a, b) => a - b);
  return {
    server: name,
    requests: latencies.length,
    throughput: Math.round(latencies.length / elapsed),
    p50: Number(percentile(sorted, 50).toFixed(2)),
    p99: Number(percentile(sorted, 99).toFixed(2)),
  };
}

const results: Result[] = [];
for (const [name, script] of [
  ["bare ws (JSON echo)", "./bare-ws-server.ts"],
  ["@pheby/server", "./pheby-server.ts"],
] as const) {
  const server = await spawnServer(script, { BENCH_SECRET: SECRET });
  try {
    results.push(await measure(name, server.port));
  } finally {
    await server.stop();
  }
}
const [bare, pheby] = results as [Result, Result];
console.log(`\nping→pong: ${CONNECTIONS} connections × ${IN_FLIGHT} in flight, ${SECONDS} s per server\n`);
table(
  results.map((r) => ({
    server: r.server,
    "round trips": r.requests,
    "req/s": r.throughput,
    "p50 ms": r.p50,
    "p99 ms": r.p99,
  })),
);
console.log(
  `\nratio @pheby/server / bare: ${(pheby.throughput / bare.throughput).toFixed(2)} (target ≥ 0.70)`,
);
