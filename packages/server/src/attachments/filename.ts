/** Longest display name kept, in code points (longer names keep their extension). */
export const MAX_FILENAME_CHARS = 255;

/**
 * A client- or agent-supplied name reduced to safe display metadata: only
 * the part after the last `/` or `\`, without control, format (bidi
 * override) or line/paragraph separator characters, trimmed, and at most
 * 255 code points. Returns undefined when nothing usable is left (empty,
 * `.`, `..`). The result is never used as a filesystem path.
 */
export function sanitiseFilename(raw: string | undefined | null): string | undefined {
  if (typeof raw !== "string") return undefined;
  const base = raw.split(/[/\\]/).pop() ?? "";
  const clean = base.replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu, "").trim();
  if (clean === "" || /^\.+$/.test(clean)) return undefined;
  const chars = [...clean];
  if (chars.length <= MAX_FILENAME_CHARS) return clean;
  const dot = clean.lastIndexOf(".");
  const ext = dot > 0 ? [...clean.slice(dot)].slice(0, 16).join("") : "";
  return chars.slice(0, MAX_FILENAME_CHARS - [...ext].length).join("") + ext;
}

/**
 * `Content-Disposition: attachment` with an ASCII fallback `filename` (quotes,
 * backslashes and non-ASCII replaced by `_`) and the exact name as RFC 8187
 * `filename*`. `attachment` (never `inline`) so a browser does not render it.
 */
export function contentDisposition(filename: string): string {
  const fallback = filename.replace(/[^\x20-\x7e]|["\\%]/g, "_");
  const encoded = encodeURIComponent(filename).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}
