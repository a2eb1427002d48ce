// How late scheduled prompts start: one-shot schedules (`at`) on whole seconds, each in its own
// conversation, against the real @pheby/server (simulator agent) in a child process; lateness is
// when this client sees the run's `run.accepted` minus the schedule's time. The baseline, in the
// same run: a plain setTimeout in this process aimed at the same instants (timer and event-loop
// jitter of the machine, no server, no socket). BENCH_SCHEDULE_CRON=1 adds one cron occurrence
// (`* * * * *`, up to a minute's wait), measured against its minute.
import { BenchClient } from "./client.js";
import { median, percentile, spawnServer, table } from "./harness.js";

const COUNT = Number(process.env.BENCH_SCHEDULES ?? 10);

const server = await spawnServer("./pheby-server.ts");
const client = await BenchClient.connect(server.port, true, ["schedules"]);
const newConversation = async () =>
  (await client.request({ type: "conversation.create" }, "conversation.created")).conversation_id!;
const due = new Map<string, number>(); // conversation → its schedule's time
const late: number[] = [];
client.on((frame) => {
  const at = frame.conversation_id ? due.get(frame.conversation_id) : undefined;
  if (frame.type === "run.accepted" && frame.request_id === undefined && at !== undefined) {
    late.push(Date.now() - at);
    due.delete(frame.conversation_id!);
  }
});

const baseline: number[] = [];
const first = Math.ceil(Date.now() / 1000) * 1000 + 2_000;
for (let i = 0; i < COUNT; i++) {
  const at = first + i * 1_000;
  const conversation_id = await newConversation();
  due.set(conversation_id, at);
  await client.request(
    { type: "schedule.create", conversation_id, prompt: "hello", at: new Date(at).toISOString() },
    "schedule.created",
  );
  setTimeout(() => baseline.push(Date.now() - at), at - Date.now());
}
let cron: number | undefined;
if (process.env.BENCH_SCHEDULE_CRON === "1") {
  const conversation_id = await newConversation();
  const minute = Math.ceil((Date.now() + 1_000) / 60_000) * 60_000;
  due.set(conversation_id, minute);
  await client.request(
    { type: "schedule.create", conversation_id, prompt: "hello", cron: "* * * * *" },
    "schedule.created",
  );
}
const deadline = Date.now() + COUNT * 1_000 + 75_000;
while (due.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
if (process.env.BENCH_SCHEDULE_CRON === "1") cron = late.pop();
client.close();
await server.stop();

const sorted = late.slice().sort((a, b) => a - b);
const base = baseline.slice().sort((a, b) => a - b);
console.log(
  `\nScheduled runs: lateness of run.accepted after the schedule's time (${late.length} of ${COUNT}).`,
);
table([
  {
    measure: "p50 ms",
    "setTimeout in-process": median(base),
    "@pheby/server schedule": median(sorted),
    ratio: (median(sorted) / Math.max(1, median(base))).toFixed(1),
  },
  {
    measure: "max ms",
    "setTimeout in-process": base.at(-1) ?? "-",
    "@pheby/server schedule": sorted.at(-1) ?? "-",
    ratio: "",
  },
  {
    measure: "p90 ms",
    "setTimeout in-process": percentile(base, 90),
    "@pheby/server schedule": percentile(sorted, 90),
    ratio: "",
  },
]);
if (cron !== undefined) console.log(`cron "* * * * *": run.accepted ${cron} ms after its minute`);
if (late.length < COUNT) {
  console.error(`only ${late.length} of ${COUNT} schedules fired`);
  process.exit(1);
}
