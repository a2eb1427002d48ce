/**
 * A tool's text output as a client may see it: the path base's paths relative, the server's own
 * directories scrubbed, secret-looking values redacted, and only its end kept.
 */
import { LIMITS } from "@pheby/protocol";
import { REDACTED, redactAssignments, redactKeys, redactSecrets } from "../util/redact.js";
import { type PlaceContext, placeText } from "./place.js";

/**
 * Longer outputs are cut to their last this-many characters before they are redacted (a command
 * can print megabytes); a private key cut open by it is handled below.
 */
const MAX_SCANNED_CHARS = 1024 * 1024;
/** The end of a PEM private key whose start was cut off. */
const ORPHAN_KEY_END = /^(?:(?!-----BEGIN )[\s\S])*?-----END [A-Z0-9 ]*PRIVATE KEY-----/;

/** How to read one output. */
export interface OutputOptions {
  /**
   * The text is a file of settings and secrets (an `.env` file): every `NAME=value` loses its value,
   * not only those of credential-looking names.
   */
  envFile?: boolean;
}

/** A text block's `text` and `truncated`. */
export interface OutputText {
  text: string;
  truncated: boolean;
}

/** Output text fit for a client (see the module comment), at most {@link LIMITS}.toolTextChars characters. */
export function outputText(text: string, ctx: PlaceContext, options: OutputOptions = {}): OutputText {
  let scanned = text;
  let truncated = false;
  if (scanned.length > MAX_SCANNED_CHARS) {
    scanned = lastChars(scanned, MAX_SCANNED_CHARS);
    truncated = true;
    scanned = scanned.replace(ORPHAN_KEY_END, REDACTED);
  }
  const placed = placeText(scanned, ctx);
  const redacted = options.envFile ? redactAssignments(placed) : redactSecrets(placed);
  const kept = lastChars(redacted, LIMITS.toolTextChars);
  return { text: kept, truncated: truncated || kept.length < redacted.length };
}

/**
 * A tool's `rawOutput` as text: a string as is, anything else as indented JSON redacted by key
 * (as tool arguments are). Undefined when there is nothing to show.
 */
export function rawOutputText(raw: unknown): string | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw === "string") return raw.trim() === "" ? undefined : raw;
  try {
    const json = JSON.stringify(redactKeys(raw), null, 2);
    return json === undefined || json === "{}" || json === "[]" ? undefined : json;
  } catch {
    return undefined;
  }
}

/** The last `max` code points of `text` at most (never half of a surrogate pair). */
export function lastChars(text: string, max: number): string {
  if (text.length <= max) return text;
  let start = text.length - max;
  const code = text.charCodeAt(start);
  if (code >= 0xdc00 && code <= 0xdfff) start++;
  return text.slice(start);
}
