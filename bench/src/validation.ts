// Validation cost: decoding an inbound frame as the server does
// (`decodeClientFrame`: UTF-8 check, JSON.parse, Zod schema) against
// JSON.parse alone (the baseline), in-process, for valid and invalid frames.
import { decodeClientFrame } from "@pheby/protocol";
import { median, table } from "./harness.js";

const ITERATIONS = Number(process.env.BENCH_VALIDATION_ITERATIONS ?? 30_000);
const RUNS = Number(process.env.BENCH_VALIDATION_RUNS ?? 5);
const id = "0123456789abcdef0123456789abcdef";
const frames: [string, object][] = [
  ["ping (valid)", { type: "ping", request_id: "r1" }],
  [
    "chat.send, 500 chars (valid)",
    { type: "chat.send", request_id: "r2", conversation_id: id, text: "word ".repeat(100) },
  ],
  [
    "approval.respond (valid)",
    { type: "approval.respond", request_id: "r3", approval_id: id, choice: "once" },
  ],
  ["chat.send without text (invalid)", { type: "chat.send", request_id: "r4", conversation_id: id }],
  ["unknown type (invalid)", { type: "nope", request_id: "r5" }],
];

/** Nanoseconds per call of `fn` over ITERATIONS calls (median of RUNS). */
function time(fn: () => unknown): number {
  const samples: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < ITERATIONS; i++) fn();
    samples.push(Number(process.hrtime.bigint() - start) / ITERATIONS);
  }
  return median(samples);
}

const rows: Record<string, string | number>[] = [];
for (const [name, frame] of frames) {
  const raw = Buffer.from(JSON.stringify(frame));
  const expectOk = name.endsWith("(valid)");
  if (decodeClientFrame(raw).ok !== expectOk) throw new Error(`${name}: decode result is not ${expectOk}`);
  // Warm both paths up so the JIT has compiled them before timing.
  time(() => JSON.parse(raw.toString()));
  const parse = time(() => JSON.parse(raw.toString()));
  const decode = time(() => decodeClientFrame(raw));
  rows.push({
    frame: name,
    bytes: raw.length,
    "JSON.parse ns": parse.toFixed(0),
    "decodeClientFrame ns": decode.toFixed(0),
    ratio: (decode / parse).toFixed(2),
    "schema share": `${Math.round((100 * (decode - parse)) / decode)}%`,
  });
}
console.log(`\nValidation: ns per inbound frame, median of ${RUNS} × ${ITERATIONS} calls, in-process`);
console.log("baseline: JSON.parse of the same bytes alone, same run\n");
table(rows);
