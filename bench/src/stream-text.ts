// The answer every streaming benchmark sends: deterministic pseudo-English
// (words from a seeded PRNG over syllables, with punctuation), so it deflates
// about as well as real prose (~2.5×) rather than as well as repeated text.
import { writeFileSync } from "node:fs";

const SYLLABLES =
  "ka lo mi ne ta su ri po an el in or us th er st ed ing ion ent pre con ver com pro dis ble tion ous ful ly ness ment ist ism ate ive".split(
    " ",
  );

/** `length` characters of deterministic prose-like text. */
export function answerText(length: number, seed = 7): string {
  let state = seed;
  const rand = (n: number) => {
    state = (state * 1_103_515_245 + 12_345) & 0x7fffffff;
    return state % n;
  };
  let text = "";
  let sentence = 0;
  while (text.length < length) {
    let word = "";
    for (let s = 0, n = 1 + rand(3); s < n; s++) word += SYLLABLES[rand(SYLLABLES.length)];
    if (sentence === 0) word = word[0]!.toUpperCase() + word.slice(1);
    sentence++;
    const end = sentence > 6 && rand(8) === 0;
    text += `${word}${end ? (rand(4) === 0 ? ".\n\n" : ". ") : rand(10) === 0 ? ", " : " "}`;
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
