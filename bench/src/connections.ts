// Connection scale: 1,000 and 5,000 idle authenticated connections (ws's
// default client, which offers permessage-deflate like browsers do) to the
// real Pheby server and to a bare ws server (the baseline, same run, same
// client code). Memory per connection is the server's RSS growth after a GC
// divided by the connections; the event-loop delay is sampled while they
// sit connected. Needs `ulimit -n` above 2 × the connections (the bench
// script raises it to the hard limit).
import { BenchClient } from "./client.js";
import { type Spawned, spawnServer, table } from "./harness.js";

const COUNTS = (process.env.BENCH_CONNECTIONS_SCALE ?? "1000,5000").split(",").map(Number);
const IDLE_MS = Number(process.env.BENCH_IDLE_MS ?? 3000);
const BATCH = 100;

async function connectMany(port: number, n: number, into: BenchClient[]): Promise<void> {
  while (into.length < n) {
    const batch = Math.min(BATCH, n - into.length);
    try {
      into.push(...(await Promise.all(Array.from({ length: batch }, () => BenchClient.connect(port, true)))));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "EMFILE" || code === "ENFILE") {
        console.error(
          `connections: out of file descriptors (${code}) at ${into.length} connections. ` +
            `Raise the limit (ulimit -n ${2 * n + 1000}; hard limit now ${process.env.BENCH_NOFILE_HARD ?? "?"}).`,
        );
        process.exit(1);
      }
      throw err;
    }
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const MiB = 2 ** 20;
const rows: Record<string, string | number>[] = [];
const perConn: Record<string, Record<number, number>> = {};
for (const [name, script] of [
  ["bare ws", "./bare-ws-server.ts"],
  ["@pheby/server", "./pheby-server.ts"],
] as const) {
  const server: Spawned = await spawnServer(script);
  const clients: BenchClient[] = [];
  try {
    await sleep(500);
    const idle = await server.stats();
    for (const n of COUNTS) {
      process.stderr.write(`connections: ${name}, ${n}\n`);
      await connectMany(server.port, n, clients);
      await sleep(1000);
      await server.stats(); // resets the event-loop histogram: only the idle period counts
      await sleep(IDLE_MS);
      const s = await server.stats();
      const per = (s.rss - idle.rss) / n;
      perConn[name] = { ...perConn[name], [n]: per };
      rows.push({
        server: name,
        connections: n,
        "RSS growth MiB": ((s.rss - idle.rss) / MiB).toFixed(1),
        "KiB / connection (RSS)": (per / 1024).toFixed(1),
        "KiB / connection (JS heap)": ((s.heapUsed - idle.heapUsed) / n / 1024).toFixed(1),
        "event-loop delay p99 ms": s.eldP99.toFixed(2),
        "max ms": s.eldMax.toFixed(2),
      });
    }
  } finally {
    for (const c of clients) c.close();
    await server.stop();
  }
}
for (const n of COUNTS) {
  rows.push({
    server: "ratio (pheby / bare)",
    connections: n,
    "RSS growth MiB": "",
    "KiB / connection (RSS)": (perConn["@pheby/server"]![n]! / perConn["bare ws"]![n]!).toFixed(2),
    "KiB / connection (JS heap)": "",
    "event-loop delay p99 ms": "",
    "max ms": "",
  });
}
if (COUNTS.length > 1) {
  // What each connection beyond the first batch costs: one-time growth (code compiled and heap grown
  // by the first handshakes) cancels out.
  const [a, b] = [COUNTS[0]!, COUNTS.at(-1)!];
  const marginal = (name: string) => (perConn[name]![b]! * b - perConn[name]![a]! * a) / (b - a);
  rows.push({
    server: `marginal ${a}→${b}: bare / pheby / ratio`,
    connections: b - a,
    "RSS growth MiB": "",
    "KiB / connection (RSS)": `${(marginal("bare ws") / 1024).toFixed(1)} / ${(marginal("@pheby/server") / 1024).toFixed(1)} / ${(marginal("@pheby/server") / marginal("bare ws")).toFixed(2)}`,
    "KiB / connection (JS heap)": "",
    "event-loop delay p99 ms": "",
    "max ms": "",
  });
}
console.log(`\nConnection scale: idle authenticated connections, ${IDLE_MS} ms idle sample`);
console.log("baseline: bare ws server, same client code, same run\n");
table(rows);
console.log("\ntargets: ≤ 2 × the bare memory per connection; event-loop delay p99 < 10 ms");
