// The answer every streaming benchmark sends: deterministic pseudo-English
// (words from a seeded PRNG over syllables, with punctuation), so it deflates
// about as well as real prose (~2.5×) rather than as well as repeated text.
import { writeFileSync } from "node:fs";

// English letter frequencies (per mille), for pseudo-words.
const LETTERS = "etaoinshrdlcumwfgypbvkjxqz";
const WEIGHTS = [
  127, 91, 82, 75, 70, 67, 63, 61, 60, 43, 40, 28, 28, 24, 24, 22, 20, 20, 20, 15, 10, 8, 2, 2, 1, 1,
];

function prng(seed: number): (n: number) => number {
  let state = seed;
  return (n) => {
    state = (state * 1_103_515_245 + 12_345) & 0x7fffffff;
    return state % n;
  };
}

/** A 3,000-word pseudo-vocabulary; words are drawn by Zipf's law, like the words of real prose. */
const VOCABULARY = (() => {
  const rand = prng(1);
  const total = WEIGHTS.reduce((a, b) => a + b, 0);
  const letter = () => {
    let x = rand(total);
    for (let i = 0; ; i++) {
      x -= WEIGHTS[i]!;
      if (x < 0) return LETTERS[i]!;
    }
  };
  return Array.from({ length: 3000 }, (_, r) =>
    Array.from({ length: 1 + Math.min(11, Math.round(Math.log2(r + 2) * 0.9)) + rand(3) }, letter).join(""),
  );
})();
/** Cumulative Zipf weights over VOCABULARY. */
const ZIPF: number[] = [];
for (let r = 0; r < VOCABULARY.length; r++) ZIPF.push((ZIPF[r - 1] ?? 0) + 1 / (r + 1));

/**
 * `length` characters of deterministic prose-like text: Zipf-distributed
 * words, sentences and paragraphs. It deflates about as well as real English
 * (≈2.8× at zlib's default level), not as well as repeated text would.
 */
export function answerText(length: number, seed = 7): string {
  const rand = prng(seed);
  const total = ZIPF.at(-1)!;
  const word = () => {
    const x = (rand(1_000_000) / 1_000_000) * total;
    let lo = 0;
    let hi = ZIPF.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (ZIPF[mid]! < x) lo = mid + 1;
      else hi = mid;
    }
    return VOCABULARY[lo]!;
  };
  let text = "";
  let sentence = 0;
  while (text.length < length) {
    let w = word();
    if (sentence === 0) w = w[0]!.toUpperCase() + w.slice(1);
    sentence++;
    const end = sentence > 5 && rand(12) === 0;
    text += `${w}${end ? (rand(5) === 0 ? ".\n\n" : ". ") : rand(12) === 0 ? ", " : " "}`;
    if (end) sentence = 0;
  }
  return text.slice(0, length);
}

/** What a stream request asks for: `stream <chars> <chunkChars> <intervalMs>` (interval 0 = burst). */
export interface StreamSpec {
  chars: number;
  chunk: number;
  intervalMs: number;
}

export function parseSpec(text: string): StreamSpec | undefined {
  const m = /^stream (\d+) (\d+) (\d+)$/.exec(text.trim());
  if (!m) return undefined;
  return { chars: Number(m[1]), chunk: Number(m[2]), intervalMs: Number(m[3]) };
}

/** Wall-clock ms with sub-ms precision, comparable across processes on one machine. */
export const wallNow = () => performance.timeOrigin + performance.now();

/**
 * Emit the answer in chunks on a fixed schedule (chunk i is due at start + i ×
 * interval; a late timer catches up rather than drifting), recording when each
 * chunk really went out. Interval 0 emits as fast as `emit` resolves.
 */
export async function pace(
  spec: StreamSpec,
  emit: (chunk: string) => void | Promise<void>,
  signal?: AbortSignal,
): Promise<number[]> {
  const text = answerText(spec.chars);
  const times: number[] = [];
  const start = wallNow();
  for (let i = 0, at = 0; at < text.length && !signal?.aborted; i++, at += spec.chunk) {
    if (spec.intervalMs > 0) {
      const wait = start + i * spec.intervalMs - wallNow();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    } else if (i % 64 === 0) {
      await new Promise((r) => setImmediate(r));
    }
    times.push(wallNow());
    await emit(text.slice(at, at + spec.chunk));
  }
  return times;
}

/** Hand the chunk emission times to the benchmark (a file named by BENCH_TIMELINE). */
export function writeTimeline(times: number[]): void {
  if (process.env.BENCH_TIMELINE) writeFileSync(process.env.BENCH_TIMELINE, JSON.stringify(times));
}
