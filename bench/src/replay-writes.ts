// Write cost of the resume extension's resume log per streamed delta, in-process on a real SQLite
// file with the server's pragmas (WAL, synchronous=FULL: one fsync per commit). Ours: consecutive
// deltas of a message update one draft row in place, fsynced every DELTAS_PER_FSYNC-th
// (ResumeLog.append). Baseline, same run, same code path: every delta inserted as a row of its own
// (each with another message_id) and fsynced; in between, in-place updates each fsynced. Internal
// modules of @pheby/server are imported from its source: they are not part of its public API.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ServerMessage } from "@pheby/protocol";
import { DELTAS_PER_FSYNC, ResumeLog } from "../../packages/server/src/store/resume-log.js";
import { Store } from "../../packages/server/src/store/store.js";
import { median, table } from "./harness.js";

const RUNS = Number(process.env.BENCH_REPLAY_RUNS ?? 5);
/** Characters per delta: ~10 deltas a second of a fast agent, coalesced by the engine. */
const STEP = 64;
const CONVERSATION = "c".repeat(32);
const TS = "2026-09-02T18:00:00.000Z";

/** Deltas timed per run: answers of the given length streamed one after the other. */
const DELTAS_PER_RUN = 1_000;

/** Microseconds per delta of answers of `chars` characters, median of RUNS fresh databases. */
function perDelta(chars: number, inPlace: boolean, deltasPerFsync: number): number {
  const samples: number[] = [];
  const perAnswer = Math.ceil(chars / STEP);
  const answers = Math.ceil(DELTAS_PER_RUN / perAnswer);
  for (let r = 0; r < RUNS; r++) {
    const dir = mkdtempSync(join(tmpdir(), "pheby-bench-replay-"));
    const store = new Store(dir);
    const log = new ResumeLog(store.db, undefined, deltasPerFsync);
    let timed = 0n;
    for (let a = 0; a < answers; a++) {
      for (let i = 1; i <= perAnswer; i++) {
        const delta: ServerMessage = {
          type: "message.delta",
          conversation_id: CONVERSATION,
          message_id: inPlace ? `draft-${a}` : `draft-${a}-${i}`,
          text: "x".repeat(Math.min(chars, i * STEP)),
          ts: TS,
        };
        const start = process.hrtime.bigint();
        log.append(CONVERSATION, delta);
        timed += process.hrtime.bigint() - start;
      }
      const text = "x".repeat(chars);
      log.append(CONVERSATION, {
        type: "message.complete",
        conversation_id: CONVERSATION,
        message_id: `draft-${a}`,
        text,
        ts: TS,
      });
    }
    samples.push(Number(timed) / 1000 / (answers * perAnswer));
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
  return median(samples);
}

const rows: Record<string, string | number>[] = [];
for (const chars of [2_000, 16_000, 64_000]) {
  perDelta(chars, true, DELTAS_PER_FSYNC); // warm-up
  const insert = perDelta(chars, false, 1);
  const update = perDelta(chars, true, 1);
  const ours = perDelta(chars, true, DELTAS_PER_FSYNC);
  rows.push({
    answer: `${chars.toLocaleString("en")} chars`,
    "deltas per answer": Math.ceil(chars / STEP),
    "insert+fsync µs": insert.toFixed(0),
    "update+fsync µs": update.toFixed(0),
    [`update, fsync 1/${DELTAS_PER_FSYNC} µs (ours)`]: ours.toFixed(0),
    ratio: (ours / insert).toFixed(2),
    "loop share at 10 deltas/s": `${((ours * 10) / 10_000).toFixed(2)}%`,
  });
}
console.log(`\nReplay log writes: µs per message.delta, median of ${RUNS} runs, store at synchronous=FULL`);
console.log("baseline: one row inserted and fsynced per delta (same code, same run)\n");
table(rows);
