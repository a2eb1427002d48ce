/**
 * Helpers of the `delta.append` extension (see {@link FEATURE_DELTA_APPEND}):
 * how a client applies a `message.delta`, and where a sender cuts one.
 */

/** What {@link applyDelta} reads of a `message.delta`. */
export interface DeltaLike {
  /** Present only on a connection that negotiated `delta.append`. */
  offset?: number | undefined;
  text: string;
}

/**
 * The draft after a `message.delta`: `draft.slice(0, offset) + text`, or just
 * `text` for a v1 cumulative delta (no `offset`). Throws a `RangeError` when
 * `offset` lies beyond `draft`: the client missed a delta (it should
 * re-`conversation.open` the conversation, whose `run.text` is the whole draft).
 */
export function applyDelta(draft: string, delta: DeltaLike): string {
  const { offset, text } = delta;
  if (offset === undefined) return text;
  if (offset > draft.length) {
    throw new RangeError(`delta offset ${offset} is beyond the draft (${draft.length} code units)`);
  }
  return draft.slice(0, offset) + text;
}

/**
 * Where an append delta from `previous` to `next` starts: the length of their
 * common prefix in UTF-16 code units, moved back one unit when it would fall
 * between the two halves of a surrogate pair (so no frame starts with a lone
 * low surrogate). Equals `previous.length` when `next` extends `previous`.
 */
export function deltaOffset(previous: string, next: string): number {
  let n: number;
  if (next.startsWith(previous)) {
    n = previous.length; // the streaming case, at memcmp speed
  } else {
    const max = Math.min(previous.length, next.length);
    n = 0;
    while (n < max && previous.charCodeAt(n) === next.charCodeAt(n)) n++;
  }
  if (
    n > 0 &&
    n < next.length &&
    isHighSurrogate(next.charCodeAt(n - 1)) &&
    isLowSurrogate(next.charCodeAt(n))
  ) {
    n--;
  }
  return n;
}

function isHighSurrogate(c: number): boolean {
  return c >= 0xd800 && c <= 0xdbff;
}

function isLowSurrogate(c: number): boolean {
  return c >= 0xdc00 && c <= 0xdfff;
}
