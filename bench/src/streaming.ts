// Streaming bandwidth: bytes on the wire per client for one streamed answer,
// with a real ACP agent child (paced-agent.ts) sending 4-character chunks
// every 5 ms (and as a burst), through the real Pheby server. Three servers run,
// one after the other: one sending a delta per chunk, one coalescing (the
// default), and one coalescing without thinning v1 deltas (the default before
// it). Each has four clients on the same stream: v1 (cumulative deltas) and
// delta.append (offset + new text), each without and with permessage-deflate,
// so one run measures naive, each technique alone and every combination. The
// baseline is naive: the spec's cumulative delta per agent chunk, uncompressed;
// v1 thinning is also reported against the unthinned server of the same run.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FEATURE_DELTA_APPEND } from "@pheby/protocol";
import { THIN_ABOVE_BYTES } from "@pheby/server";
import { BenchClient } from "./client.js";
import { median, type Spawned, spawnServer, table } from "./harness.js";
import { CHUNK, type Measured, watch } from "./stream-watch.js";

const SIZES = (process.env.BENCH_STREAM_SIZES ?? "2000,16000,64000").split(",").map(Number);
const RUNS = Number(process.env.BENCH_STREAM_RUNS ?? 1);
const INTERVAL_MS = Number(process.env.BENCH_STREAM_INTERVAL_MS ?? 5);
const COALESCE_MS = process.env.BENCH_DELTA_MS ?? "100";

/** The four clients of one server: v1 or delta.append, without or with permessage-deflate. */
const CLIENTS = ["plain", "deflate", "append", "appendDeflate"] as const;
type ClientName = (typeof CLIENTS)[number];

interface Setup {
  server: Spawned;
  timeline: string;
  clients: Record<ClientName, BenchClient>;
  conversation: string;
}

async function setup(dir: string, name: string, deltaMs: string, env: Record<string, string> = {}) {
  const timeline = join(dir, `${name}.timeline.json`);
  const server = await spawnServer("./pheby-server.ts", {
    ...env,
    BENCH_AGENT: "paced",
    BENCH_TIMELINE: timeline,
    BENCH_DELTA_MS: deltaMs,
    BENCH_DATA_DIR: mkdtempSync(join(dir, `${name}-`)),
  });
  const append = [FEATURE_DELTA_APPEND];
  const clients: Record<ClientName, BenchClient> = {
    plain: await BenchClient.connect(server.port, false),
    deflate: await BenchClient.connect(server.port, true),
    append: await BenchClient.connect(server.port, false, append),
    appendDeflate: await BenchClient.connect(server.port, true, append),
  };
  if (!clients.deflate.deflated || !clients.appendDeflate.deflated)
    throw new Error("the server did not negotiate permessage-deflate");
  const created = await clients.plain.request({ type: "conversation.create" }, "conversation.created");
  return { server, timeline, clients, conversation: created.conversation_id! } satisfies Setup;
}

async function run(s: Setup, chars: number, intervalMs: number): Promise<Record<ClientName, Measured>> {
  const watched = CLIENTS.map((name) => [name, watch(s.clients[name], chars)] as const);
  await s.clients.plain.request(
    { type: "chat.send", conversation_id: s.conversation, text: `stream ${chars} ${CHUNK} ${intervalMs}` },
    "run.accepted",
  );
  await s.clients.plain.next((f) => f.type === "run.finished");
  // The agent writes its chunk times before it ends the turn, so before run.finished.
  const timeline = JSON.parse(readFileSync(s.timeline, "utf8")) as number[];
  const result = {} as Record<ClientName, Measured>;
  for (const [name, measured] of watched) result[name] = await measured(timeline);
  return result;
}

const dir = mkdtempSync(join(tmpdir(), "pheby-bench-stream-"));
process.stderr.write("streaming: starting servers\n");
// A delta per chunk in a burst queues faster than zlib compresses it: the queued (uncompressed)
// frames would trip the 8 MiB slow-consumer cap of a perfectly healthy client, so the naive
// server gets a 1 GiB cap to be measurable at all (docs/performance.md). On a loaded machine its
// compressed clients fall a minute behind (the ping waits behind the queued frames), so it also
// gets a heartbeat that does not drop them.
const perChunk = await setup(dir, "per-chunk", "0", {
  BENCH_MAX_BUFFERED: String(2 ** 30),
  BENCH_HEARTBEAT_MS: String(30 * 60_000),
});
const coalesced = await setup(dir, "coalesced", COALESCE_MS);
const unthinned = await setup(dir, "unthinned", COALESCE_MS, { BENCH_THIN: "0" });
const rows: Record<string, string | number>[] = [];
const thinRows: Record<string, string | number>[] = [];
const fmt = (x: number) => (Number.isNaN(x) ? "-" : x.toFixed(1));
try {
  for (const [pacing, intervalMs] of [
    [`${CHUNK} chars / ${INTERVAL_MS} ms`, INTERVAL_MS],
    ["burst", 0],
  ] as const) {
    for (const chars of SIZES) {
      const samples: Record<string, Measured[]> = {};
      for (let r = 0; r < RUNS; r++) {
        process.stderr.write(`streaming: ${chars} chars, ${pacing}, run ${r + 1}/${RUNS}\n`);
        // One server at a time: the naive one is heavy enough to distort the other's latency.
        const a = await run(perChunk, chars, intervalMs);
        // The two coalescing servers alternate which goes first, so neither always follows the naive one.
        const first = r % 2 === 0 ? coalesced : unthinned;
        const x = await run(first, chars, intervalMs);
        const y = await run(first === coalesced ? unthinned : coalesced, chars, intervalMs);
        const [b, c] = first === coalesced ? [x, y] : [y, x];
        for (const [key, m] of [
          ["naive (delta per chunk)", a.plain],
          ["permessage-deflate only", a.deflate],
          [`coalescing ${COALESCE_MS} ms only, v1 thinning off`, c.plain],
          [`coalescing ${COALESCE_MS} ms + deflate, v1 thinning off (before)`, c.deflate],
          [`coalescing ${COALESCE_MS} ms only`, b.plain],
          [`coalescing ${COALESCE_MS} ms + deflate (default)`, b.deflate],
          ["append deltas only", a.append],
          ["append + deflate", a.appendDeflate],
          [`append + coalescing ${COALESCE_MS} ms`, b.append],
          [`append + coalescing ${COALESCE_MS} ms + deflate (default, opted in)`, b.appendDeflate],
        ] as const) {
          samples[key] = [...(samples[key] ?? []), m];
        }
      }
      const naive = median(samples["naive (delta per chunk)"]!.map((m) => m.bytes));
      for (const [technique, ms] of Object.entries(samples)) {
        const bytes = median(ms.map((m) => m.bytes));
        rows.push({
          answer: `${chars / 1000}k`,
          pacing,
          technique,
          "bytes/client": bytes,
          "× answer": (bytes / chars).toFixed(2),
          "ratio to naive": (bytes / naive).toFixed(4),
          deltas: median(ms.map((m) => m.deltas)),
          "first delta ms": median(ms.map((m) => m.firstMs)).toFixed(1),
          "max chunk delay ms": median(ms.map((m) => m.maxDelayMs)).toFixed(1),
          "p99 chunk delay ms": median(ms.map((m) => m.p99DelayMs)).toFixed(1),
        });
      }
      // The default against the same server without v1 thinning, for the two v1 clients.
      for (const deflate of [false, true]) {
        const [off, on] = [
          samples[
            `coalescing ${COALESCE_MS} ms${deflate ? " + deflate" : " only"}, v1 thinning off${deflate ? " (before)" : ""}`
          ]!,
          samples[`coalescing ${COALESCE_MS} ms${deflate ? " + deflate (default)" : " only"}`]!,
        ];
        const med = (xs: Measured[], f: (m: Measured) => number) => median(xs.map(f));
        const bytesOff = med(off, (m) => m.bytes);
        const bytesOn = med(on, (m) => m.bytes);
        thinRows.push({
          answer: `${chars / 1000}k`,
          pacing,
          "v1 client": deflate ? "deflate" : "uncompressed",
          "bytes, thinning off": bytesOff,
          "bytes, thinning on": bytesOn,
          "ratio on / off": (bytesOn / bytesOff).toFixed(3),
          "× answer off / on": `${(bytesOff / chars).toFixed(2)} / ${(bytesOn / chars).toFixed(2)}`,
          "deltas off / on": `${med(off, (m) => m.deltas)} / ${med(on, (m) => m.deltas)}`,
          "p99 below ms off / on": `${fmt(med(off, (m) => m.p99BelowMs))} / ${fmt(med(on, (m) => m.p99BelowMs))}`,
          "p99 above ms off / on": `${fmt(med(off, (m) => m.p99AboveMs))} / ${fmt(med(on, (m) => m.p99AboveMs))}`,
          "max above ms on": fmt(med(on, (m) => m.maxAboveMs)),
        });
      }
    }
  }
} finally {
  for (const s of [perChunk, coalesced, unthinned]) {
    for (const name of CLIENTS) s.clients[name].close();
    await s.server.stop();
  }
  rmSync(dir, { recursive: true, force: true });
}
console.log(
  `\nStreaming bandwidth: one answer from a real ACP agent child, bytes read by one client (median of ${RUNS})`,
);
console.log("baseline: naive = one uncompressed cumulative delta per agent chunk, same run, same agent\n");
table(rows);
console.log(
  "\ntargets (64k, default): ≤ 4 × answer on the wire; first delta ≤ 50 ms after the agent's first chunk; no chunk delayed > 150 ms\n" +
    "(v1 clients get cumulative deltas; clients that ask for delta.append get offset + new text)",
);
console.log(
  `\nv1 thinning: the default against the same coalescing without it, same run (above / below: chunks whose v1 delta frame is over / within ${THIN_ABOVE_BYTES} bytes)\n`,
);
table(thinRows);
console.log(
  "\ntargets (v1 + deflate, paced): 64k ≤ 16 × answer; 2k and 16k within +5 % of thinning off; p99 chunk delay ≤ 150 ms below, ≤ 1,600 ms above",
);
