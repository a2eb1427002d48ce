import { codePointLength, type HistoryThought, LIMITS } from "@pheby/protocol";
import { CoalescedText } from "./stream.js";

/** Where a run's thoughts go out: the cumulative text of a thought, and its end. */
export interface ThoughtEvents {
  delta(thoughtId: string, text: string): void;
  complete(thoughtId: string, text: string): void;
}

interface Streaming {
  id: string;
  stream: CoalescedText;
  /** Its length in characters (code points), as the limits count. */
  chars: number;
}

/**
 * The thoughts of one run (the `thoughts` extension): the agent's thinking, one thought at a time,
 * each streamed in coalesced deltas like the answer and ended when the agent moves on ({@link end}).
 * Bounded by `LIMITS.thoughtChars` per thought and `LIMITS.thoughtCharsPerRun` per run: what lies
 * beyond is dropped (a thought keeps its first 64,000 characters; once the run's thoughts reach
 * 256,000, the streaming one is cut there and no later one starts), never split inside a surrogate pair.
 */
export class RunThoughts {
  readonly #done: HistoryThought[] = [];
  #current: Streaming | undefined;
  #count = 0;
  #runChars = 0;

  constructor(
    private readonly runId: string,
    private readonly intervalMs: number,
    private readonly events: ThoughtEvents,
  ) {}

  /** Whether a thought is streaming (the next chunk continues it rather than starting one). */
  get streaming(): boolean {
    return this.#current !== undefined;
  }

  /** A chunk of the agent's thinking: continues the streaming thought, or starts one. */
  append(chunk: string): void {
    let current = this.#current;
    if (!current) {
      if (this.#runChars >= LIMITS.thoughtCharsPerRun) return;
      const id = `thought-${this.runId}-${++this.#count}`;
      current = {
        id,
        stream: new CoalescedText(this.intervalMs, (text) => this.events.delta(id, text)),
        chars: 0,
      };
      this.#current = current;
    }
    const room = Math.min(LIMITS.thoughtChars - current.chars, LIMITS.thoughtCharsPerRun - this.#runChars);
    const { text, chars } = firstChars(chunk, room);
    if (chars === 0) return;
    current.chars += chars;
    this.#runChars += chars;
    current.stream.append(text);
  }

  /** The agent moved on (it answers, calls a tool, asks, or the turn ends): the streaming thought ends. */
  end(): void {
    const current = this.#current;
    if (!current) return;
    this.#current = undefined;
    current.stream.stop();
    const text = current.stream.text;
    this.#done.push({ thought_id: current.id, run_id: this.runId, text, complete: true });
    this.events.complete(current.id, text);
  }

  /** The run's thoughts so far, oldest first, as `conversation.history.thoughts` lists them. */
  list(): HistoryThought[] {
    const current = this.#current;
    if (!current) return [...this.#done];
    return [
      ...this.#done,
      { thought_id: current.id, run_id: this.runId, text: current.stream.text, complete: false },
    ];
  }
}

/** The first `max` characters (code points) of `s`, never half a surrogate pair, and how many they are. */
export function firstChars(s: string, max: number): { text: string; chars: number } {
  if (max <= 0) return { text: "", chars: 0 };
  const all = codePointLength(s);
  if (all <= max) return { text: s, chars: all };
  let i = 0;
  for (let n = 0; n < max; n++) {
    const c = s.charCodeAt(i);
    const pair = c >= 0xd800 && c <= 0xdbff && i + 1 < s.length;
    const low = pair ? s.charCodeAt(i + 1) : 0;
    i += pair && low >= 0xdc00 && low <= 0xdfff ? 2 : 1;
  }
  return { text: s.slice(0, i), chars: max };
}
