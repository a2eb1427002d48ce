// Push notifications, measured against the WebSocket in the same run:
// 1. event → push: for each run, chat.send → the run.finished frame on a WebSocket client (the
//    baseline) and chat.send → the run_finished push request at a local receiver that decrypts it.
// 2. streaming with a hanging endpoint: a run's time to run.finished and its gaps between deltas,
//    with no subscription and with one whose push service never answers. No effect is expected: a
//    push goes out on its endpoint's queue, off the run's path.
import { startPushReceiver } from "@pheby/conformance";
import { BenchClient } from "./client.js";
import { percentile, spawnServer, table } from "./harness.js";
import { wallNow } from "./stream-text.js";

const RUNS = Number(process.env.BENCH_PUSH_RUNS ?? 100);
const STREAM_RUNS = Number(process.env.BENCH_PUSH_STREAM_RUNS ?? 20);

const stats = (xs: number[]) => {
  const sorted = xs.slice().sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
};
const ms = (x: number) => Number(x.toFixed(2));

const receiver = await startPushReceiver();
const server = await spawnServer("./pheby-server.ts", { BENCH_PUSH_PRIVATE: "1" });
try {
  const client = await BenchClient.connect(server.port, true, ["push"]);
  const phone = receiver.endpoint("phone");
  const subscribed = await client.request(
    { type: "push.subscribe", endpoint: phone.endpoint, keys: phone.keys },
    "push.subscribed",
  );
  const phoneId = subscribed.subscription_id as string;
  const conv = (await client.request({ type: "conversation.create", name: "bench" }, "conversation.created"))
    .conversation_id as string;

  // 1. event → push
  const wsMs: number[] = [];
  const pushMs: number[] = [];
  const gapMs: number[] = [];
  for (let i = 0; i < RUNS + 10; i++) {
    const sent = wallNow();
    const accepted = await client.request(
      { type: "chat.send", conversation_id: conv, text: "ok" },
      "run.accepted",
    );
    let finishedAt = 0;
    await client.next((f) => {
      if (f.type === "run.finished" && f.run_id === accepted.run_id) finishedAt = wallNow();
      return finishedAt > 0;
    });
    const push = await phone.next();
    if (push.payload.run_id !== accepted.run_id) throw new Error("push of another run");
    if (i < 10) continue; // warm-up
    wsMs.push(finishedAt - sent);
    pushMs.push(push.receivedAt - sent);
    gapMs.push(push.receivedAt - finishedAt);
  }
  const ws = stats(wsMs);
  const push = stats(pushMs);
  const gap = stats(gapMs);
  console.log(`\nevent → push on loopback: ${RUNS} runs, chat.send "ok" (simulator), one subscription\n`);
  table([
    {
      path: "chat.send → run.finished frame (WebSocket, baseline)",
      "p50 ms": ms(ws.p50),
      "p99 ms": ms(ws.p99),
    },
    {
      path: "chat.send → run_finished push request (decrypted)",
      "p50 ms": ms(push.p50),
      "p99 ms": ms(push.p99),
    },
    { path: "run.finished frame → push request", "p50 ms": ms(gap.p50), "p99 ms": ms(gap.p99) },
  ]);
  console.log(
    `\nratio push / WebSocket: p50 ${(push.p50 / ws.p50).toFixed(2)}, p99 ${(push.p99 / ws.p99).toFixed(2)}`,
  );
  await client.request({ type: "push.unsubscribe", subscription_id: phoneId }, "push.unsubscribed");

  // 2. streaming with and without a hanging endpoint
  const stream = async () => {
    const totals: number[] = [];
    const gaps: number[] = [];
    for (let i = 0; i < STREAM_RUNS; i++) {
      const sent = wallNow();
      const accepted = await client.request(
        { type: "chat.send", conversation_id: conv, text: "/sim long 20000" },
        "run.accepted",
      );
      let last = sent;
      let done = 0;
      await client.next((f) => {
        const now = wallNow();
        if (f.type === "message.delta" && f.message_id === `draft-${accepted.run_id}`) {
          gaps.push(now - last);
          last = now;
        }
        if (f.type === "run.finished" && f.run_id === accepted.run_id) done = now;
        return done > 0;
      });
      totals.push(done - sent);
    }
    return { total: stats(totals), gap: stats(gaps), deltas: gaps.length };
  };
  const without = await stream();
  const stuck = receiver.endpoint("stuck");
  stuck.answer(...Array<"hang">(1000).fill("hang"));
  await client.request(
    { type: "push.subscribe", endpoint: stuck.endpoint, keys: stuck.keys },
    "push.subscribed",
  );
  const withHang = await stream();
  if (stuck.received.length > 0) throw new Error("the hanging endpoint answered");
  console.log(
    `\nstreaming /sim long 20000, ${STREAM_RUNS} runs each; the hanging endpoint got ${stuck.requests} requests, answered none\n`,
  );
  table([
    {
      subscriptions: "none (baseline)",
      deltas: without.deltas,
      "run p50 ms": ms(without.total.p50),
      "run p99 ms": ms(without.total.p99),
      "delta gap p50 ms": ms(without.gap.p50),
      "delta gap p99 ms": ms(without.gap.p99),
    },
    {
      subscriptions: "one hanging endpoint",
      deltas: withHang.deltas,
      "run p50 ms": ms(withHang.total.p50),
      "run p99 ms": ms(withHang.total.p99),
      "delta gap p50 ms": ms(withHang.gap.p50),
      "delta gap p99 ms": ms(withHang.gap.p99),
    },
  ]);
  console.log(
    `\nratio hanging / none: run p50 ${(withHang.total.p50 / without.total.p50).toFixed(2)}, p99 ${(withHang.total.p99 / without.total.p99).toFixed(2)}`,
  );
  client.close();
} finally {
  await server.stop();
  await receiver.close();
}
