// How late scheduled prompts start: one-shot schedules (`at`) on whole seconds, each in its own
// conversation, against the real @pheby/server (simulator agent) in a child process; lateness is
// when this client sees the run's `run.accepted` minus the schedule's time. The baseline, in the
// same run: a plain setTimeout in this process aimed at the same instants (timer and event-loop
// jitter of the machine, no server, no socket). BENCH_SCHEDULE_CRON=1 adds one cron occurrence
// (`* * * * *`, up to a minute's wait), measured against its minute.
import WebSocket from "ws";

/** A reply frame, as far as this benchmark reads it. */
interface Reply {
  type: string;
  request_id?: string;
  conversation_id: string;
  features?: string[];
}

import { median, percentile, spawnServer, table } from "./harness.js";

const COUNT = Number(process.env.BENCH_SCHEDULES ?? 10);
const SECRET = "bench-secret-0123456789";

async function connect(port: number): Promise<{ socket: WebSocket; request(frame: object): Promise<Reply> }> {
  const socket = new WebSocket(`ws://127.0.0.1:${port}/ws`);
  await new Promise<void>((resolve, reject) => {
    socket.once("open", () => resolve());
    socket.once("error", reject);
  });
  let next = 0;
  const pending = new Map<string, (frame: Reply) => void>();
  socket.on("message", (data) => {
    const frame = JSON.parse(String(data)) as Reply;
    if (frame.request_id !== undefined) pending.get(frame.request_id)?.(frame);
  });
  const request = (frame: object) =>
    new Promise<Reply>((resolve) => {
      const request_id = `r${next++}`;
      pending.set(request_id, resolve);
      socket.send(JSON.stringify({ ...frame, request_id }));
    });
  const ready = await request({
    type: "hello",
    secret: SECRET,
    protocol_version: 1,
    features: ["schedules"],
  });
  if (!ready.features?.includes("schedules")) throw new Error("the server did not enable schedules");
  return { socket, request };
}

const server = await spawnServer("./pheby-server.ts");
const { socket, request } = await connect(server.port);
const due = new Map<string, number>(); // conversation → its schedule's time
const late: number[] = [];
socket.on("message", (data) => {
  const frame = JSON.parse(String(data)) as { type: string; conversation_id?: string; request_id?: string };
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
  const { conversation_id } = await request({ type: "conversation.create" });
  due.set(conversation_id, at);
  const created = await request({
    type: "schedule.create",
    conversation_id,
    prompt: "hello",
    at: new Date(at).toISOString(),
  });
  if (created.type !== "schedule.created")
    throw new Error(`schedule.create failed: ${JSON.stringify(created)}`);
  setTimeout(() => baseline.push(Date.now() - at), at - Date.now());
}
let cron: number | undefined;
if (process.env.BENCH_SCHEDULE_CRON === "1") {
  const { conversation_id } = await request({ type: "conversation.create" });
  const minute = Math.ceil((Date.now() + 1_000) / 60_000) * 60_000;
  due.set(conversation_id, minute);
  await request({ type: "schedule.create", conversation_id, prompt: "hello", cron: "* * * * *" });
}
const deadline = Date.now() + COUNT * 1_000 + 75_000;
while (due.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
if (process.env.BENCH_SCHEDULE_CRON === "1") cron = late.pop();
socket.terminate();
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
