// The `thoughts` extension on the wire, with a real ACP agent child (paced-agent.ts) through the real
// Pheby server, at the streaming benchmark's pace (4 characters every 5 ms):
//
// 1. Bytes: a 64,000-character thought costs how many bytes on a `thoughts` connection (with and without
//    permessage-deflate), against the same 64,000 characters streamed as an answer to a `delta.append`
//    connection in the same run (the baseline: what an answer costs today).
// 2. Latency: the answer's p99 chunk delay (agent chunk → client) with a thought streaming beside it in
//    another conversation, on the same connection, against the same answer alone in the same run.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FEATURE_DELTA_APPEND, FEATURE_THOUGHTS, LIMITS } from "@pheby/protocol";
import { BenchClient, type Frame } from "./client.js";
import { spawnServer, table } from "./harness.js";
import { CHUNK, type Measured, watch } from "./stream-watch.js";

const THOUGHT_CHARS = Number(process.env.BENCH_THOUGHT_CHARS ?? 64_000);
const ANSWER_CHARS = Number(process.env.BENCH_THOUGHT_ANSWER_CHARS ?? 16_000);
const INTERVAL_MS = Number(process.env.BENCH_STREAM_INTERVAL_MS ?? 5);

const dir = mkdtempSync(join(tmpdir(), "pheby-bench-thoughts-"));
const timeline = join(dir, "timeline.json");
const server = await spawnServer("./pheby-server.ts", {
  BENCH_AGENT: "paced",
  BENCH_TIMELINE: timeline,
  BENCH_DATA_DIR: mkdtempSync(join(dir, "data-")),
});

try {
  const both = [FEATURE_DELTA_APPEND, FEATURE_THOUGHTS];
  const thinker = await BenchClient.connect(server.port, true, both);
  const thinkerPlain = await BenchClient.connect(server.port, false, [FEATURE_THOUGHTS]);
  const answerer = await BenchClient.connect(server.port, true, [FEATURE_DELTA_APPEND]);
  const create = async () =>
    (await thinker.request({ type: "conversation.create" }, "conversation.created")).conversation_id!;
  const finished = (client: BenchClient, conversationId: string) =>
    client.next((f) => f.type === "run.finished" && f.conversation_id === conversationId);
  const send = async (conversationId: string, text: string) =>
    (await thinker.request({ type: "chat.send", conversation_id: conversationId, text }, "run.accepted"))
      .run_id!;

  // 1. Bytes of a 64k thought, and of the same text as an answer (the baseline).
  process.stderr.write(`thoughts: a ${THOUGHT_CHARS}-character thought, then the same as an answer\n`);
  const c1 = await create();
  let thoughtText = "";
  const offThought = thinker.on((f) => {
    if (f.type === "thought.complete") thoughtText = f.text!;
  });
  const thoughtDone = Promise.all([finished(thinker, c1), finished(thinkerPlain, c1)]);
  thinker.bytes = 0;
  thinkerPlain.bytes = 0;
  await send(c1, `think ${THOUGHT_CHARS} ${CHUNK} ${INTERVAL_MS}`);
  await thoughtDone;
  offThought();
  if (thoughtText.length !== THOUGHT_CHARS)
    throw new Error(`the thought has ${thoughtText.length} characters, not ${THOUGHT_CHARS}`);
  const thoughtBytes = { deflate: thinker.bytes, plain: thinkerPlain.bytes };
  const answerDone = finished(answerer, c1);
  answerer.bytes = 0;
  await send(c1, `stream ${THOUGHT_CHARS} ${CHUNK} ${INTERVAL_MS}`);
  await answerDone;
  const answerBytes = answerer.bytes;

  // 2. The answer's chunk delays alone, then with a thought streaming beside it (same connection).
  const answers = await create();
  const thoughts = await create();
  /** `client` seen through one conversation only (the stream watcher reads every frame it gets). */
  const only = (client: BenchClient, conversationId: string) =>
    ({
      set bytes(_: number) {},
      on: (listener: (f: Frame, at: number) => void) =>
        client.on((f, at) => {
          if (f.conversation_id === conversationId) listener(f, at);
        }),
    }) as unknown as BenchClient;
  const answer = async (): Promise<Measured> => {
    const measured = watch(only(thinker, answers), ANSWER_CHARS);
    const done = finished(thinker, answers);
    await send(answers, `stream ${ANSWER_CHARS} ${CHUNK} ${INTERVAL_MS}`);
    await done;
    return measured(JSON.parse(readFileSync(timeline, "utf8")) as number[]);
  };
  process.stderr.write(`thoughts: a ${ANSWER_CHARS}-character answer alone, then beside a thought\n`);
  const alone = await answer();
  // A thought longer than the answer, started first, so it streams for the whole answer.
  const thoughtChars = Math.min(LIMITS.thoughtChars, Math.ceil(ANSWER_CHARS * 1.5));
  const thinking = await send(thoughts, `think ${thoughtChars} ${CHUNK} ${INTERVAL_MS}`);
  await thinker.next((f) => f.type === "thought.delta" && f.conversation_id === thoughts);
  let thoughtDeltas = 0;
  const countThoughts = thinker.on((f) => {
    if (f.type === "thought.delta") thoughtDeltas++;
  });
  const beside = await answer();
  countThoughts();
  const stillThinking = !(await Promise.race([
    finished(thinker, thoughts).then(() => true),
    new Promise((r) => setTimeout(() => r(false), 0)),
  ]));
  await thinker.request({ type: "run.cancel", conversation_id: thoughts, run_id: thinking }, "run.finished");

  const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
  const ratio = (n: number) => `${(n / THOUGHT_CHARS).toFixed(2)}×`;
  console.log(`\n## Thoughts on the wire (${THOUGHT_CHARS} characters, ${CHUNK} every ${INTERVAL_MS} ms)\n`);
  table([
    {
      stream: "thought, thoughts + deflate",
      bytes: kib(thoughtBytes.deflate),
      "× its length": ratio(thoughtBytes.deflate),
    },
    {
      stream: "thought, thoughts, no deflate",
      bytes: kib(thoughtBytes.plain),
      "× its length": ratio(thoughtBytes.plain),
    },
    {
      stream: "baseline: answer, delta.append + deflate",
      bytes: kib(answerBytes),
      "× its length": ratio(answerBytes),
    },
  ]);
  console.log(
    `\nthought / answer (both deflated, same run): ${(thoughtBytes.deflate / answerBytes).toFixed(2)}×; target ≤ 1.2× the thought's length: ${thoughtBytes.deflate <= 1.2 * THOUGHT_CHARS ? "met" : "NOT met"}`,
  );
  console.log(`\n## The answer's chunk delay with a thought beside it (${ANSWER_CHARS} characters)\n`);
  const row = (name: string, m: Measured) => ({
    run: name,
    "first delta ms": m.firstMs.toFixed(1),
    "p99 ms": m.p99DelayMs.toFixed(1),
    "max ms": m.maxDelayMs.toFixed(1),
    deltas: m.deltas,
  });
  table([
    row("answer alone (baseline)", alone),
    row(`beside a thought (${thoughtDeltas} thought deltas)`, beside),
  ]);
  const diff = beside.p99DelayMs - alone.p99DelayMs;
  console.log(
    `\np99 beside / alone: ${(beside.p99DelayMs / alone.p99DelayMs).toFixed(2)}× (${diff >= 0 ? "+" : ""}${diff.toFixed(1)} ms; target within 10 ms: ${Math.abs(diff) <= 10 ? "met" : "NOT met"}); the thought ${stillThinking ? "was still streaming when the answer ended" : "ended before the answer (make it longer)"}`,
  );
  for (const c of [thinker, thinkerPlain, answerer]) c.close();
} finally {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
