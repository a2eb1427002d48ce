// Watching one benchmark client through one streamed answer: the bytes it read, its deltas, and
// when each agent chunk first reached it (against the agent's own timeline). Shared by the
// streaming benchmarks.
import { applyDelta } from "@pheby/protocol";
import type { BenchClient, Frame } from "./client.js";
import { percentile } from "./harness.js";

/** Characters per agent chunk in the streaming benchmarks. */
export const CHUNK = 4;

/** What one client got of one run. */
export interface Measured {
  bytes: number;
  deltas: number;
  firstMs: number;
  maxDelayMs: number;
  p99DelayMs: number;
}

/** Watch one client through one run: bytes, deltas, and when each agent chunk first reached it. */
export function watch(client: BenchClient, chars: number) {
  const seenAt: number[] = [];
  let deltas = 0;
  let firstAt = Number.NaN;
  let last = "";
  client.bytes = 0;
  const cover = (text: string, at: number) => {
    if (!text.startsWith(last)) throw new Error("a delta is not an extension of the previous one");
    last = text;
    for (let i = seenAt.length; (i + 1) * CHUNK <= text.length; i++) seenAt.push(at);
  };
  const done = new Promise<void>((resolve) => {
    const off = client.on((f: Frame, at: number) => {
      if (f.type === "message.delta") {
        if (deltas++ === 0) firstAt = at;
        // Cumulative (v1) or stitched from an append delta: the same draft either way.
        cover(applyDelta(last, f as { text: string; offset?: number }), at);
      } else if (f.type === "message.complete" && !f.kind) {
        if (f.text!.length !== chars) throw new Error(`final text has ${f.text!.length} chars, not ${chars}`);
        cover(f.text!, at);
      } else if (f.type === "run.finished") {
        off();
        resolve();
      }
    });
  });
  return async (timeline: number[]): Promise<Measured> => {
    await done;
    const delays = timeline.map((t, i) => seenAt[i]! - t).sort((a, b) => a - b);
    return {
      bytes: client.bytes,
      deltas,
      firstMs: firstAt - timeline[0]!,
      maxDelayMs: delays.at(-1)!,
      p99DelayMs: percentile(delays, 99),
    };
  };
}
