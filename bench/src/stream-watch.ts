// Watching one benchmark client through one streamed answer: the bytes it read, its deltas, and
// when each agent chunk first reached it (against the agent's own timeline). Shared by the
// streaming benchmarks.
import { applyDelta } from "@pheby/protocol";
import { THIN_ABOVE_BYTES } from "@pheby/server";
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
  /**
   * The same for the chunks a v1 delta frame of at most {@link THIN_ABOVE_BYTES} carries (deflate's
   * window, where v1 thinning starts), and for those past it (NaN for a shorter answer).
   */
  p99BelowMs: number;
  p99AboveMs: number;
  maxAboveMs: number;
}

/** Watch one client through one run: bytes, deltas, and when each agent chunk first reached it. */
export function watch(client: BenchClient, chars: number) {
  const seenAt: number[] = [];
  let deltas = 0;
  let firstAt = Number.NaN;
  let last = "";
  /** Bytes of a v1 delta frame besides its JSON-escaped text (from the first delta). */
  let envelope = 0;
  client.bytes = 0;
  const cover = (text: string, at: number) => {
    if (!text.startsWith(last)) throw new Error("a delta is not an extension of the previous one");
    last = text;
    for (let i = seenAt.length; (i + 1) * CHUNK <= text.length; i++) seenAt.push(at);
  };
  const done = new Promise<void>((resolve) => {
    const off = client.on((f: Frame, at: number) => {
      if (f.type === "message.delta") {
        if (deltas++ === 0) {
          firstAt = at;
          envelope = JSON.stringify({ ...f, offset: undefined }).length - JSON.stringify(f.text).length;
        }
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
    const byChunk = timeline.map((t, i) => seenAt[i]! - t);
    const split = firstAbove(last, envelope);
    const delays = byChunk.slice().sort((a, b) => a - b);
    const below = byChunk.slice(0, split).sort((a, b) => a - b);
    const above = byChunk.slice(split).sort((a, b) => a - b);
    return {
      bytes: client.bytes,
      deltas,
      firstMs: firstAt - timeline[0]!,
      maxDelayMs: delays.at(-1)!,
      p99DelayMs: percentile(delays, 99),
      p99BelowMs: percentile(below, 99),
      p99AboveMs: percentile(above, 99),
      maxAboveMs: above.at(-1) ?? Number.NaN,
    };
  };
}

/** The first chunk whose v1 delta frame (the text up to it, escaped, plus `envelope`) exceeds the threshold. */
function firstAbove(text: string, envelope: number): number {
  const bytes = (i: number) => envelope + Buffer.byteLength(JSON.stringify(text.slice(0, (i + 1) * CHUNK)));
  let lo = 0;
  let hi = Math.ceil(text.length / CHUNK);
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (bytes(mid) > THIN_ABOVE_BYTES) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}
