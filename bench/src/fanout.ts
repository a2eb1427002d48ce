// Fan-out: one agent stream delivered to 1, 10 and 100 authenticated clients.
// Pheby runs the ACP backend against the real paced-agent child, with one
// delta per chunk (BENCH_DELTA_MS=0) and uncompressed clients, so it sends the
// same frames as the baseline: a bare ws server that generates the same
// answer with the same pacing in-process and broadcasts identical bytes.
// deliveries/s comes from a burst; chunk → client latency from 4-char chunks every 5 ms.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BenchClient } from "./client.js";
import { median, percentile, spawnServer, table } from "./harness.js";

const COUNTS = (process.env.BENCH_FANOUT_CLIENTS ?? "1,10,100").split(",").map(Number);
const RUNS = Number(process.env.BENCH_FANOUT_RUNS ?? 3);
const CHARS = 2000;
const CHUNK = 4;

interface Result {
  deliveriesPerSec: number;
  p50: number;
  p99: number;
}

/** One streamed answer to every client: deliveries/s (from the agent's first chunk) and per-delta latency. */
async function streamTo(clients: BenchClient[], timelinePath: string, intervalMs: number) {
  const arrivals: { chunk: number; at: number }[] = [];
  const finished = clients.map(
    (c) =>
      new Promise<void>((resolve) => {
        const off = c.on((f, at) => {
          if (f.type === "message.delta") arrivals.push({ chunk: f.text!.length / CHUNK - 1, at });
          if (f.type === "run.finished") {
            off();
            resolve();
          }
        });
      }),
  );
  const sender = clients[0]!;
  await sender.request(
    {
      type: "chat.send",
      conversation_id: conversation.get(sender),
      text: `stream ${CHARS} ${CHUNK} ${intervalMs}`,
    },
    "run.accepted",
  );
  await Promise.all(finished);
  const timeline = JSON.parse(readFileSync(timelinePath, "utf8")) as number[];
  const latencies = arrivals.map((a) => a.at - timeline[a.chunk]!).sort((x, y) => x - y);
  const last = Math.max(...arrivals.map((a) => a.at));
  return {
    deliveriesPerSec: arrivals.length / ((last - timeline[0]!) / 1000),
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
  };
}

const conversation = new Map<BenchClient, string>();
const dir = mkdtempSync(join(tmpdir(), "pheby-bench-fanout-"));
const rows: Record<string, string | number>[] = [];
const byCount: Record<number, Record<string, Result>> = {};
for (const [name, script, env] of [
  ["bare ws (broadcast, same frames)", "./bare-ws-server.ts", {}],
  ["@pheby/server (ACP agent child)", "./pheby-server.ts", { BENCH_AGENT: "paced", BENCH_DELTA_MS: "0" }],
] as const) {
  const timeline = join(dir, `${name.length}.timeline.json`);
  const server = await spawnServer(script, {
    ...env,
    BENCH_TIMELINE: timeline,
    BENCH_DATA_DIR: mkdtempSync(join(dir, "d-")),
  });
  try {
    const clients: BenchClient[] = [];
    for (const n of COUNTS) {
      while (clients.length < n) clients.push(await BenchClient.connect(server.port, false));
      if (!conversation.has(clients[0]!)) {
        const created =
          script === "./pheby-server.ts"
            ? await clients[0]!.request({ type: "conversation.create" }, "conversation.created")
            : { conversation_id: "bare" };
        conversation.set(clients[0]!, created.conversation_id as string);
      }
      const burst: Result[] = [];
      const paced: Result[] = [];
      for (let r = 0; r < RUNS; r++) {
        process.stderr.write(`fan-out: ${name}, ${n} clients, run ${r + 1}/${RUNS}\n`);
        burst.push(await streamTo(clients, timeline, 0));
        paced.push(await streamTo(clients, timeline, 5));
      }
      const result = {
        deliveriesPerSec: median(burst.map((b) => b.deliveriesPerSec)),
        p50: median(paced.map((p) => p.p50)),
        p99: median(paced.map((p) => p.p99)),
      };
      byCount[n] = { ...byCount[n], [name]: result };
      rows.push({
        server: name,
        clients: n,
        "deliveries/s (burst)": Math.round(result.deliveriesPerSec),
        "p50 ms (4 chars / 5 ms)": result.p50.toFixed(2),
        "p99 ms (4 chars / 5 ms)": result.p99.toFixed(2),
      });
    }
    for (const c of clients) c.close();
  } finally {
    await server.stop();
  }
}
for (const n of COUNTS) {
  const [bare, pheby] = Object.values(byCount[n]!) as [Result, Result];
  rows.push({
    server: "ratio (pheby / bare)",
    clients: n,
    "deliveries/s (burst)": (pheby.deliveriesPerSec / bare.deliveriesPerSec).toFixed(2),
    "p50 ms (4 chars / 5 ms)": "",
    "p99 ms (4 chars / 5 ms)": "",
  });
}
rmSync(dir, { recursive: true, force: true });
console.log(
  `\nFan-out: one ${CHARS}-char answer (${CHARS / CHUNK} cumulative deltas) to N clients, median of ${RUNS} runs`,
);
console.log("baseline: bare ws broadcasting identical frames from the same pacing, same run\n");
table(rows);
console.log("\ntargets: ratio ≥ 0.6; p99 agent chunk → client < 20 ms at 100 clients");
