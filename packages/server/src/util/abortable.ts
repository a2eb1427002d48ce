/**
 * The items of `source`, failing with `signal.reason` as soon as `signal`
 * aborts — even while a read is pending, which matters for a stalled peer:
 * it sends nothing that would ever end that read.
 */
export async function* abortable<T>(source: AsyncIterable<T>, signal: AbortSignal): AsyncGenerator<T> {
  const it = source[Symbol.asyncIterator]();
  const aborted = new Promise<never>((_, reject) => {
    signal.addEventListener("abort", () => reject(signal.reason), { once: true });
  });
  aborted.catch(() => {}); // observed through the race below
  try {
    for (;;) {
      signal.throwIfAborted();
      const next = await Promise.race([it.next(), aborted]);
      if (next.done) return;
      yield next.value;
    }
  } finally {
    // Release the source, unless a read is still pending (aborted): that read may never settle.
    if (!signal.aborted) await it.return?.();
  }
}
