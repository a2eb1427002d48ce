/** Keys whose values never leave the server: token, secret, password, API key, auth, cookie, credential, private key, session. */
const SECRET_KEY = /token|secret|passw(?:or)?d|api[-_ ]?key|auth|cookie|credential|private[-_ ]?key|session/i;

/** Value that replaces a secret-looking key's value. */
export const REDACTED = "[REDACTED]";
/** Longer strings are cut so a tool's bulk input (a whole file) does not ride along on every event. */
const MAX_STRING = 2_000;
const MAX_DEPTH = 10;

/**
 * Redact tool arguments recursively: any key matching {@link SECRET_KEY}
 * (case-insensitive, anywhere in the key) gets `"[REDACTED]"`, at any depth,
 * inside arrays too. Long strings are truncated and nesting is bounded.
 * Errs on the side of redacting (`author` matches `auth`).
 */
export function redactArgs(args: Record<string, unknown>): Record<string, unknown> {
  return redactValue(args, 0) as Record<string, unknown>;
}

function redactValue(value: unknown, depth: number): unknown {
  if (typeof value === "string") {
    return value.length > MAX_STRING ? `${value.slice(0, MAX_STRING)}…` : value;
  }
  if (value === null || typeof value !== "object") {
    return typeof value === "bigint" ? value.toString() : value;
  }
  if (depth >= MAX_DEPTH) return "[TRUNCATED]";
  if (Array.isArray(value)) return value.map((v) => redactValue(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    out[key] = SECRET_KEY.test(key) ? REDACTED : redactValue(v, depth + 1);
  }
  return out;
}

/** Cut an error message to `max` characters. */
export function truncate(text: string, max = 500): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** Secret-looking spans of free text: bearer tokens, `sk-…` style keys, `key=value` for secret-looking keys. */
const SECRET_SPANS = [
  /\b(bearer\s+)[\w.~+/=-]{8,}/gi,
  /\b(?:sk|pk|rk|ghp|gho|xox[abp])[-_][\w-]{8,}/gi,
  /\b((?:[\w-]*(?:token|secret|passw(?:or)?d|api[-_ ]?key|auth|cookie|credential))["']?\s*[:=]\s*["']?)[^\s"',;]{4,}/gi,
];

/**
 * Redact secret-looking spans of a free text (an agent's error message) and cut it to `max`
 * characters. Keeps the words around them, so the message stays useful.
 */
export function redactText(text: string, max = 500): string {
  let out = text;
  for (const re of SECRET_SPANS) out = out.replace(re, (_m, keep?: string) => `${keep ?? ""}${REDACTED}`);
  return truncate(out, max);
}
