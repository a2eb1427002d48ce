// The resume extension, measured against the snapshot in the same run.
//
// 1. Reconnect: a conversation of 500 messages (written into the server's SQLite file while it is
//    stopped, as in history.ts); a phone opens it, drops, three events happen (a rename, YOLO on,
//    YOLO off, by another client), and the phone reconnects. Bytes read and time from socket open
//    to an up-to-date view: resumed (`since_seq`: the reply, then the three events) against the
//    snapshot v1 prescribes (`conversation.open`, the page of 200 or the whole 500). Fresh
//    connections with permessage-deflate, as phones negotiate it.
// 2. Streaming: a real ACP agent child streams an answer at 4 characters / 5 ms through two
//    servers, one with resume (every event stamped and logged) and one with it off; the phone's
//    client (append + deflate, with resume where offered) on each. Bytes, chunk delay and the
//    server's event-loop delay, alternating servers, medians.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FEATURE_DELTA_APPEND, FEATURE_QUEUE, FEATURE_RESUME } from "@pheby/protocol";
import Database from "better-sqlite3";
import { BenchClient, type Frame } from "./client.js";
import { median, type Spawned, spawnServer, table } from "./harness.js";
import { answerText } from "./stream-text.js";
import { CHUNK, type Measured, watch } from "./stream-watch.js";

const TRIALS = Number(process.env.BENCH_RESUME_TRIALS ?? 15);
const MESSAGES = 500;
const STREAM_SIZES = (process.env.BENCH_RESUME_STREAM_SIZES ?? "16000,64000").split(",").map(Number);
const STREAM_RUNS = Number(process.env.BENCH_RESUME_STREAM_RUNS ?? 3);
/** What @pheby/client asks for by default. */
const PHONE = [FEATURE_DELTA_APPEND, FEATURE_RESUME, FEATURE_QUEUE];

const dir = mkdtempSync(join(tmpdir(), "pheby-bench-resume-"));

// ---- 1. reconnect: resume against the snapshot ----

async function prepare(): Promise<{ server: Spawned; conversation: string }> {
  const data = join(dir, "reconnect");
  let server = await spawnServer("./pheby-server.ts", { BENCH_DATA_DIR: data });
  const c = await BenchClient.connect(server.port, false);
  const conversation = (await c.request({ type: "conversation.create" }, "conversation.created"))
    .conversation_id!;
  c.close();
  await server.stop();
  const db = new Database(join(data, "pheby.sqlite"));
  const insert = db.prepare("INSERT INTO messages (conversation_id, role, text, ts) VALUES (?, ?, ?, ?)");
  // Messages of 50..550 characters, as in history.ts.
  db.transaction(() => {
    for (let n = 0; n < MESSAGES; n++) {
      const text = answerText(50 + ((n * 97) % 500), (n % 64) + 1);
      insert.run(conversation, n % 2 ? "assistant" : "user", text, Date.now());
    }
  })();
  db.close();
  server = await spawnServer("./pheby-server.ts", { BENCH_DATA_DIR: data });
  return { server, conversation };
}

type Mode = "resume" | "snapshot 200" | "snapshot 500";

/** One reconnect: from socket open to the view being up to date. */
async function reconnect(port: number, conversation: string, mode: Mode, since: number) {
  const start = performance.now();
  const c = await BenchClient.connect(port, true, PHONE);
  const request_id = "reopen";
  c.send({
    type: "conversation.open",
    conversation_id: conversation,
    request_id,
    ...(mode === "resume" ? { since_seq: since } : { limit: mode === "snapshot 200" ? 200 : 500 }),
  });
  const reply = await c.next((f) => f.request_id === request_id);
  if (mode === "resume") {
    if (reply.type !== "conversation.resumed") throw new Error(`not resumed: ${reply.type}`);
    const last = reply.to_seq as number;
    if (last > since) await c.next((f) => f.seq === last);
  } else if (reply.type !== "conversation.history") throw new Error(`no snapshot: ${reply.type}`);
  const ms = performance.now() - start;
  const bytes = c.bytes;
  c.close();
  return { ms, bytes, reply };
}

async function reconnects(): Promise<Record<string, string | number>[]> {
  const { server, conversation } = await prepare();
  const modes: Mode[] = ["resume", "snapshot 200", "snapshot 500"];
  const samples = new Map<Mode, { ms: number; bytes: number }[]>(modes.map((m) => [m, []]));
  const other = await BenchClient.connect(server.port, true);
  try {
    for (let t = -2; t < TRIALS; t++) {
      for (const mode of modes) {
        // The phone's view, then the drop.
        const phone = await BenchClient.connect(server.port, true, PHONE);
        const view = await phone.request(
          { type: "conversation.open", conversation_id: conversation, limit: MESSAGES },
          "conversation.history",
        );
        phone.close();
        // Three events while it is away.
        await other.request(
          { type: "conversation.rename", conversation_id: conversation, name: `Trip ${t} ${mode}` },
          "conversation.renamed",
        );
        for (const enabled of [true, false]) {
          await other.request({ type: "yolo.set", conversation_id: conversation, enabled }, "yolo.changed");
        }
        const got = await reconnect(server.port, conversation, mode, view.seq as number);
        if (mode === "resume" && (got.reply.to_seq as number) - (view.seq as number) !== 3)
          throw new Error(`expected 3 missed events, the log says ${got.reply.to_seq} - ${view.seq}`);
        if (t >= 0) samples.get(mode)!.push(got); // two warm-up rounds
      }
    }
  } finally {
    other.close();
    await server.stop();
  }
  const base = (m: Mode) => samples.get(m)!;
  const rows: Record<string, string | number>[] = [];
  for (const mode of modes) {
    const bytes = median(base(mode).map((s) => s.bytes));
    const ms = median(base(mode).map((s) => s.ms));
    const snapshotBytes = median(base("snapshot 500").map((s) => s.bytes));
    const snapshotMs = median(base("snapshot 500").map((s) => s.ms));
    rows.push({
      reconnect: mode === "resume" ? "resume (since_seq)" : `snapshot (limit ${mode.split(" ")[1]})`,
      "bytes read": bytes,
      "ms to up to date": ms.toFixed(1),
      "bytes / snapshot 500": (bytes / snapshotBytes).toFixed(3),
      "time / snapshot 500": (ms / snapshotMs).toFixed(2),
    });
  }
  return rows;
}

// ---- 2. streaming: the cost of seq and the log ----

interface StreamSetup {
  server: Spawned;
  timeline: string;
  phone: BenchClient;
  conversation: string;
}

async function streamServer(name: string, resume: boolean): Promise<StreamSetup> {
  const timeline = join(dir, `${name}.timeline.json`);
  const server = await spawnServer("./pheby-server.ts", {
    BENCH_AGENT: "paced",
    BENCH_TIMELINE: timeline,
    BENCH_DATA_DIR: mkdtempSync(join(dir, `${name}-`)),
    ...(resume ? {} : { BENCH_RESUME: "0" }),
  });
  const phone = await BenchClient.connect(
    server.port,
    true,
    resume ? PHONE : [FEATURE_DELTA_APPEND, FEATURE_QUEUE],
  );
  const conversation = (await phone.request({ type: "conversation.create" }, "conversation.created"))
    .conversation_id!;
  return { server, timeline, phone, conversation };
}

async function stream(s: StreamSetup, chars: number): Promise<Measured & { eldP99: number }> {
  await s.server.stats(); // resets the event-loop histogram
  const measured = watch(s.phone, chars);
  await s.phone.request(
    { type: "chat.send", conversation_id: s.conversation, text: `stream ${chars} ${CHUNK} 5` },
    "run.accepted",
  );
  await s.phone.next((f: Frame) => f.type === "run.finished");
  const result = await measured(JSON.parse(readFileSync(s.timeline, "utf8")) as number[]);
  return { ...result, eldP99: (await s.server.stats()).eldP99 };
}

async function streaming(): Promise<Record<string, string | number>[]> {
  const on = await streamServer("resume-on", true);
  const off = await streamServer("resume-off", false);
  const rows: Record<string, string | number>[] = [];
  try {
    for (const chars of STREAM_SIZES) {
      type Sample = Awaited<ReturnType<typeof stream>>;
      const samples: { on: Sample[]; off: Sample[] } = { on: [], off: [] };
      for (let r = 0; r < STREAM_RUNS; r++) {
        process.stderr.write(`resume: streaming ${chars} chars, run ${r + 1}/${STREAM_RUNS}\n`);
        // Alternating, one server at a time.
        samples.off.push(await stream(off, chars));
        samples.on.push(await stream(on, chars));
      }
      const m = (
        xs: Awaited<ReturnType<typeof stream>>[],
        k: "bytes" | "p99DelayMs" | "maxDelayMs" | "eldP99",
      ) => median(xs.map((x) => x[k]));
      for (const [label, xs] of [
        ["resume off (baseline)", samples.off],
        ["resume on: seq + log", samples.on],
      ] as const) {
        rows.push({
          answer: `${chars / 1000}k`,
          server: label,
          "bytes/client": m(xs, "bytes"),
          "bytes ratio": (m(xs, "bytes") / m(samples.off, "bytes")).toFixed(3),
          "p99 chunk delay ms": m(xs, "p99DelayMs").toFixed(1),
          "max chunk delay ms": m(xs, "maxDelayMs").toFixed(1),
          "server loop delay p99 ms": m(xs, "eldP99").toFixed(1),
        });
      }
    }
  } finally {
    for (const s of [on, off]) {
      s.phone.close();
      await s.server.stop();
    }
  }
  return rows;
}

try {
  process.stderr.write("resume: reconnects\n");
  const reconnectRows = await reconnects();
  const streamRows = await streaming();
  console.log(
    `\nResume: reconnect to a ${MESSAGES}-message conversation after 3 missed events, median of ${TRIALS}`,
  );
  console.log("baseline: the snapshot (conversation.open) of the same conversation, same server, same run\n");
  table(reconnectRows);
  console.log("\ntarget: resume ≤ 5% of the snapshot's bytes");
  console.log(`\nResume: cost of seq and the resume log while streaming (median of ${STREAM_RUNS})`);
  console.log("baseline: the same server with resume off (nothing logged), same agent, same run\n");
  table(streamRows);
  console.log("\ntarget: within noise");
} finally {
  rmSync(dir, { recursive: true, force: true });
}
