/** A resolved byte range, both ends inclusive. */
export interface ByteRange {
  start: number;
  end: number;
}

/**
 * Parse a `Range` header against a file of `size` bytes (RFC 9110 §14).
 * Returns `undefined` to serve the whole file: no header, a header that is
 * malformed, names another unit, or asks for several ranges (a server may
 * ignore those). Returns `"unsatisfiable"` for a well-formed single range
 * that selects nothing (416). Otherwise the clamped range (206).
 */
export function parseRange(
  header: string | undefined,
  size: number,
): ByteRange | "unsatisfiable" | undefined {
  if (header === undefined) return undefined;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match) return undefined;
  const [, first = "", last = ""] = match;
  if (first === "" && last === "") return undefined;
  if (first === "") {
    // Suffix range: the last N bytes.
    const n = Number(last);
    if (!Number.isSafeInteger(n)) return undefined;
    if (n === 0 || size === 0) return "unsatisfiable";
    return { start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(first);
  const end = last === "" ? Number.MAX_SAFE_INTEGER : Number(last);
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || end < start) return undefined;
  if (start >= size) return "unsatisfiable";
  return { start, end: Math.min(end, size - 1) };
}
