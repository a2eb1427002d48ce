// Slow and dead readers against the built server. A "stopped" reader is a real
// socket whose reading is paused: the kernel buffers fill, then the server's send buffer grows
// until the per-client cap (8 MiB, DEFAULT_MAX_BUFFERED_BYTES) closes it with 4503.
import type { Socket } from "node:net";
import { CLOSE_CODES } from "@pheby/protocol";
import { afterEach, describe, expect, it } from "vitest";
import {
  type App,
  createConversation,
  fdCount,
  Peer,
  percentile,
  rssMiB,
  sleep,
  startApp,
  waitFor,
} from "./harness.js";

/** Stated bound: a slow reader may add at most this much to the server's peak RSS. */
const SLOW_RSS_BOUND_MIB = 64;
/** Stated bound: other clients' p99 ping latency with the slow reader ≤ 3 × baseline + 100 ms (noisy shared CI). */
const p99Bound = (baseline: number) => 3 * baseline + 100;

let app: App | undefined;
afterEach(async () => {
  await app?.kill();
  app = undefined;
});

/** The socket under a ws connection; pausing it stops reading (and answering pings) for real. */
const rawSocket = (peer: Peer) => (peer.ws as unknown as { _socket: Socket })._socket;

/** Ping round trips of `peers` every 20 ms until `stop()`; returns the latencies. */
function pingLoop(peers: Peer[]): { latencies: number[]; stop: () => Promise<void> } {
  const latencies: number[] = [];
  let running = true;
  const loops = peers.map(async (p) => {
    while (running) {
      const t0 = performance.now();
      await p.request({ type: "ping" }, undefined, 30_000);
      latencies.push(performance.now() - t0);
      await sleep(20);
    }
  });
  return {
    latencies,
    stop: async () => {
      running = false;
      await Promise.all(loops);
    },
  };
}

/** Run `/sim long 1000000` (up to 8 cumulative deltas of up to 1 MB each) and wait for its end. */
async function longRun(driver: Peer, conversation: string): Promise<number> {
  let deltas = 0;
  const count = (m: { type: string; conversation_id?: string }) => {
    if (m.type === "message.delta" && m.conversation_id === conversation) deltas++;
  };
  const off = driver.on(count);
  const finished = driver.upcoming(
    (m) => m.type === "run.finished" && m.conversation_id === conversation,
    120_000,
  );
  const accepted = await driver.request({
    type: "chat.send",
    conversation_id: conversation,
    text: "/sim long 1000000",
  });
  expect(accepted.type).toBe("run.accepted");
  expect(await finished).toMatchObject({ status: "completed" });
  off();
  return deltas;
}

describe("slow and dead readers", () => {
  it("a reader that stops is closed with 4503 at the 8 MiB cap; memory stays bounded; others' p99 holds", async () => {
    app = await startApp();
    const driver = await Peer.ready(app.wsUrl);
    const conversation = await createConversation(driver);
    driver.keepFrames = false;
    const readers = await Promise.all(Array.from({ length: 5 }, () => Peer.ready(app!.wsUrl)));
    for (const r of readers) r.keepFrames = false;
    let peakRss = 0;
    const sampler = setInterval(() => {
      peakRss = Math.max(peakRss, rssMiB(app!.pid));
    }, 50);

    // Baseline: the same load without a slow reader.
    await longRun(driver, conversation); // warm-up
    peakRss = 0;
    const base = pingLoop(readers);
    for (let i = 0; i < 3; i++) await longRun(driver, conversation);
    await base.stop();
    const basePeak = peakRss;

    // A client connects, authenticates and stops reading.
    const slow = await Peer.ready(app.wsUrl);
    rawSocket(slow).pause();
    peakRss = 0;
    const loaded = pingLoop(readers);
    let deltas = 0;
    let runs = 0;
    // A v1 reader gets few deltas of a long answer (thinned past deflate's window), about 1 MB a
    // run, so it takes more runs than the 8 MiB cap over the kernel's socket buffers to fill it.
    while (!app.output().includes("slow consumer") && runs < 40) {
      deltas += await longRun(driver, conversation);
      runs++;
    }
    await loaded.stop();
    clearInterval(sampler);
    const slowPeak = peakRss;
    expect(app.output()).toContain("slow consumer: send buffer over cap, closing");
    const buffered = Number(/"buffered":(\d+)[^\n]*slow consumer/.exec(app.output())?.[1]);

    // Reading again, it gets what was queued and then the 4503 close.
    rawSocket(slow).resume();
    expect((await slow.closed).code).toBe(CLOSE_CODES.slowConsumer);

    const baseP99 = percentile(base.latencies, 99);
    const loadedP99 = percentile(loaded.latencies, 99);
    console.log(
      `[slow] slow reader closed 4503 after ${runs} runs of /sim long 1000000 (${deltas} deltas of up to 1 MB; ` +
        `${(buffered / 1048576).toFixed(1)} MiB queued at the close); peak RSS ${basePeak.toFixed(0)} MiB without it, ` +
        `${slowPeak.toFixed(0)} MiB with it (bound +${SLOW_RSS_BOUND_MIB}); other clients' ping p99 ${baseP99.toFixed(1)} ms ` +
        `-> ${loadedP99.toFixed(1)} ms (bound ${p99Bound(baseP99).toFixed(0)} ms; ${loaded.latencies.length} pings)`,
    );
    expect(buffered).toBeGreaterThan(8 * 1024 * 1024);
    expect(slowPeak - basePeak).toBeLessThan(SLOW_RSS_BOUND_MIB);
    expect(loadedP99).toBeLessThan(p99Bound(baseP99));
    // The others saw every run complete and stay connected.
    for (const r of readers) {
      expect(r.closeState?.code).toBeUndefined();
      expect(r.invalid).toEqual([]);
      r.close();
    }
    driver.close();
  });

  it("a half-open connection (alive TCP, no pongs) is dropped by the ws ping (PHEBY_HEARTBEAT_INTERVAL_MS=500)", async () => {
    app = await startApp({ env: { PHEBY_HEARTBEAT_INTERVAL_MS: "500" } });
    const control = await Peer.ready(app.wsUrl);
    const dead = await Peer.ready(app.wsUrl);
    const fds = fdCount(app.pid);
    rawSocket(dead).pause(); // the peer vanishes without a FIN: it never answers a ping again
    // Dropped after it misses one ping: within two intervals, give or take a tick.
    await waitFor(() => fdCount(app!.pid) < fds, 5_000, "the half-open socket to be dropped");
    rawSocket(dead).resume();
    const { code } = await dead.closed;
    expect(code).toBe(1006); // terminated, no close frame: the peer is presumed gone
    // A peer that answers pings stays, well past several intervals.
    await sleep(2_000);
    expect(control.closeState?.code).toBeUndefined();
    expect((await control.request({ type: "ping" })).type).toBe("pong");
    control.close();
  });
});
