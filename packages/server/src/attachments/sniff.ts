import type { AttachmentKind } from "@pheby/protocol";

/** How many leading bytes {@link sniff} looks at. */
export const SNIFF_BYTES = 4096;

/** What the content says a file is. */
export interface Sniffed {
  mimeType: string;
  kind: AttachmentKind;
  /** True only for raster images a phone can safely decode and preview (PNG, JPEG, GIF, WebP). */
  inlineImage: boolean;
}

const ascii = (b: Uint8Array, at: number, s: string) =>
  b.length >= at + s.length && [...s].every((ch, i) => b[at + i] === ch.charCodeAt(0));

/** Recognise a format by its magic number; undefined when the bytes match none we know. */
function magic(b: Uint8Array): Sniffed | undefined {
  const image = (mimeType: string): Sniffed => ({ mimeType, kind: "image", inlineImage: true });
  if (ascii(b, 0, "\x89PNG\r\n\x1a\n")) return image("image/png");
  if (b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return image("image/jpeg");
  if (ascii(b, 0, "GIF87a") || ascii(b, 0, "GIF89a")) return image("image/gif");
  if (ascii(b, 0, "RIFF") && ascii(b, 8, "WEBP")) return image("image/webp");
  const of = (mimeType: string, kind: AttachmentKind): Sniffed => ({ mimeType, kind, inlineImage: false });
  if (ascii(b, 0, "%PDF-")) return of("application/pdf", "document");
  if (ascii(b, 0, "OggS")) {
    // Opus in Ogg is what phones record voice notes as.
    const head = new TextDecoder("latin1").decode(b.subarray(0, 128));
    return head.includes("OpusHead") ? of("audio/ogg", "voice") : of("audio/ogg", "audio");
  }
  if (ascii(b, 0, "#!AMR")) return of("audio/amr", "voice");
  if (ascii(b, 0, "RIFF") && ascii(b, 8, "WAVE")) return of("audio/wav", "audio");
  if (ascii(b, 0, "fLaC")) return of("audio/flac", "audio");
  if (ascii(b, 0, "ID3") || (b[0] === 0xff && b[1] !== undefined && (b[1] & 0xe0) === 0xe0)) {
    return of("audio/mpeg", "audio");
  }
  if (ascii(b, 4, "ftyp")) {
    const brand = new TextDecoder("latin1").decode(b.subarray(8, 12));
    if (brand === "M4A " || brand === "M4B ") return of("audio/mp4", "audio");
    if (brand.startsWith("3gp")) return of("video/3gpp", "video");
    if (brand === "qt  ") return of("video/quicktime", "video");
    if (/^(heic|heix|mif1|msf1|avif)$/.test(brand))
      return of(`image/${brand === "avif" ? "avif" : "heic"}`, "image");
    return of("video/mp4", "video");
  }
  if (b[0] === 0x1a && b[1] === 0x45 && b[2] === 0xdf && b[3] === 0xa3) return of("video/webm", "video");
  if (ascii(b, 0, "PK\x03\x04")) return of("application/zip", "document");
  return undefined;
}

/** True when `head` looks like UTF-8 text: decodes (a cut last character allowed) and has no NUL. */
export function looksLikeText(head: Uint8Array): boolean {
  if (head.length === 0 || head.includes(0)) return false;
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(head, { stream: true });
    return true;
  } catch {
    return false;
  }
}

/** A declared MIME type reduced to a lowercase `type/subtype`, or undefined when it is not one. */
export function normaliseMime(declared: string | undefined | null): string | undefined {
  const base = (declared ?? "").split(";")[0]!.trim().toLowerCase();
  return /^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/.test(base) ? base : undefined;
}

const TEXT_BY_EXTENSION: Record<string, string> = {
  txt: "text/plain",
  md: "text/markdown",
  markdown: "text/markdown",
  csv: "text/csv",
  json: "application/json",
  log: "text/plain",
};

/** Types that are text for inlining purposes besides text/*. */
const TEXTUAL = new Set(["application/json", "application/xml", "application/x-yaml", "application/yaml"]);

/** True for MIME types whose content is text (text/*, JSON, XML, YAML). */
export function isTextual(mime: string): boolean {
  return mime.startsWith("text/") || TEXTUAL.has(mime);
}

/**
 * Classify a file from its first bytes, its declared type and its display
 * name. The content wins: a recognised magic number decides the type, so a
 * PDF declared as `image/png` is a PDF and `inline_image` is true only for
 * bytes that really are PNG, JPEG, GIF or WebP (never SVG, which is script).
 * Unrecognised content keeps the declared type (or one derived from a text
 * extension) but never becomes an inline image.
 */
export function sniff(head: Uint8Array, declared: string | undefined, filename: string): Sniffed {
  const known = magic(head);
  if (known) return known;
  const ext = /\.([a-z0-9]{1,10})$/i.exec(filename)?.[1]?.toLowerCase() ?? "";
  let mime = normaliseMime(declared);
  if (mime === undefined || mime === "application/octet-stream") {
    mime = looksLikeText(head) ? (TEXT_BY_EXTENSION[ext] ?? "text/plain") : "application/octet-stream";
  }
  // A declared raster type whose bytes did not match its magic is not trusted as an image.
  const [type] = mime.split("/");
  const kind: AttachmentKind =
    type === "audio" ? "audio" : type === "video" ? "video" : type === "image" ? "image" : "document";
  return { mimeType: mime, kind, inlineImage: false };
}
