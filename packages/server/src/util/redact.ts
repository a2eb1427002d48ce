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
  return redactValue(args, 0, MAX_STRING) as Record<string, unknown>;
}

/**
 * Redact any JSON-like value by key as {@link redactArgs} does, without cutting its strings (a
 * tool's output is bounded by its caller, which keeps its end).
 */
export function redactKeys(value: unknown): unknown {
  return redactValue(value, 0, Number.POSITIVE_INFINITY);
}

function redactValue(value: unknown, depth: number, maxString: number): unknown {
  if (typeof value === "string") {
    return value.length > maxString ? `${value.slice(0, maxString)}…` : value;
  }
  if (value === null || typeof value !== "object") {
    return typeof value === "bigint" ? value.toString() : value;
  }
  if (depth >= MAX_DEPTH) return "[TRUNCATED]";
  if (Array.isArray(value)) return value.map((v) => redactValue(v, depth + 1, maxString));
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    out[key] = SECRET_KEY.test(key) ? REDACTED : redactValue(v, depth + 1, maxString);
  }
  return out;
}

/** Cut an error message to `max` characters. */
export function truncate(text: string, max = 500): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/**
 * Secret-looking spans of free text. Each keeps its first group (the words naming the secret) and
 * loses the rest: PEM private keys whole, bearer tokens, well-known key formats (`sk-…`, GitHub,
 * Slack, AWS access keys, Google API keys, JWTs), a URL's password, `NAME=value` lines of a
 * credential-looking name (what an `.env` file holds), and `key: value` for secret-looking keys.
 */
const SECRET_SPANS = [
  /(-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----)[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)/g,
  /\b(bearer\s+)[\w.~+/=-]{8,}/gi,
  /\b(?:sk|pk|rk|ghp|gho|ghs|ghu|ghr|github_pat|xox[abprs]|glpat)[-_][\w-]{8,}/gi,
  /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g,
  /\bAIza[\w-]{35}\b/g,
  /\beyJ[\w-]{8,}\.eyJ[\w-]{8,}\.[\w-]{8,}/g,
  /\b([a-z][a-z0-9+.-]*:\/\/[^\s:/@]+:)[^\s@/]+(?=@)/gi,
  /^([ \t]*(?:export[ \t]+)?[A-Za-z_][\w.-]*(?:key|token|secret|passw(?:or)?d|pass|pwd|auth|credential|cookie|session|private|dsn|salt|signature|cert)[\w.-]*[ \t]*[:=][ \t]*)\S.*$/gim,
  /\b((?:[\w-]*(?:token|secret|passw(?:or)?d|api[-_ ]?key|auth|cookie|credential))["']?\s*[:=]\s*["']?)[^\s"',;]{4,}/gi,
];

/** How a text is redacted. */
export interface RedactOptions {
  /**
   * Keep the text's lines (`\n`s) where they are: a secret spanning lines (a PEM private key) leaves
   * `[REDACTED]` on each line it held instead of one, so lines of the text still line up with the
   * original's (a patch's hunk counts stay true).
   */
  keepLines?: boolean;
}

/**
 * Redact the secret-looking spans of a free text (see {@link SECRET_SPANS}), keeping the words
 * around them so the text stays useful. Never cuts.
 */
export function redactSecrets(text: string, options: RedactOptions = {}): string {
  let out = text;
  // A pattern without a group gets the match's offset as its second argument, not words to keep.
  for (const re of SECRET_SPANS)
    out = out.replace(re, (match: string, keep: unknown) => {
      const kept = typeof keep === "string" ? keep : "";
      const lines = options.keepLines ? match.slice(kept.length).split("\n").length - 1 : 0;
      return `${kept}${REDACTED}${`\n${REDACTED}`.repeat(lines)}`;
    });
  return out;
}

/** `NAME=value` (or `NAME: value`) lines: the value of each, whatever the name. */
const ASSIGNMENT_LINE = /^([ \t]*(?:export[ \t]+)?[A-Za-z_][\w.-]*[ \t]*=[ \t]*)\S.*$/gm;

/**
 * Redact every assignment's value: for the text of a file that holds nothing but settings and
 * secrets (an `.env` file), where even a harmless-looking name may carry one.
 */
export function redactAssignments(text: string, options: RedactOptions = {}): string {
  return redactSecrets(text, options).replace(ASSIGNMENT_LINE, (_m, keep: string) => `${keep}${REDACTED}`);
}

/**
 * Redact secret-looking spans of a free text (an agent's error message) and cut it to `max`
 * characters. Keeps the words around them, so the message stays useful.
 */
export function redactText(text: string, max = 500): string {
  return truncate(redactSecrets(text), max);
}
