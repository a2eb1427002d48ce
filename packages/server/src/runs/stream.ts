import { performance } from "node:perf_hooks";

/**
 * Text a run streams in coalesced deltas (its answer, each of its thoughts): the first chunk goes out
 * at once, later ones within `intervalMs` of the last delta wait for the window, so a fast agent costs
 * at most one delta per window whatever its chunk rate. `send` gets the cumulative text; a delta is
 * sent only when the text grew since the last one. The final text always goes out in the stream's own
 * complete event, so a tail still waiting when the stream ends is never sent as a delta.
 */
export class CoalescedText {
  /** The cumulative text so far. */
  text = "";
  #sentLength = 0;
  #lastAt = Number.NEGATIVE_INFINITY;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly intervalMs: number,
    private readonly send: (text: string) => void,
  ) {}

  /** Append a chunk; a delta goes out now or when the window ends. */
  append(chunk: string): void {
    this.text += chunk;
    if (this.#timer) return;
    const wait = this.#lastAt + this.intervalMs - performance.now();
    if (wait <= 0) this.flush();
    else this.#timer = setTimeout(() => this.flush(), wait);
  }

  /** Send what is waiting now (another event of the run follows it). */
  flush(): void {
    this.stop();
    if (this.text.length === this.#sentLength) return;
    this.#sentLength = this.text.length;
    this.#lastAt = performance.now();
    this.send(this.text);
  }

  /** Forget the waiting tail's timer (the stream ends; its complete event carries the text). */
  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
