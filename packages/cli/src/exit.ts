import { PhebyError } from "@pheby/client";

/**
 * Exit codes of `pheby`. Scripts rely on them; they are documented in docs/cli.md.
 */
export const EXIT = {
  /** Success. */
  ok: 0,
  /** Bad command line (unknown command or flag, missing argument), or a local file problem. */
  usage: 1,
  /** The server answered with a protocol error, sent an invalid frame, or did not answer in time. */
  protocol: 2,
  /** Authentication failed: wrong secret, version mismatch, locked out, auth timeout, HTTP 401. */
  auth: 3,
  /** The server could not be reached, or the connection dropped. */
  connection: 4,
  /** The operation ran but its outcome is negative: a chat run failed or was cancelled, a conformance check failed. */
  failed: 5,
} as const;

/** A command-line mistake: exits with {@link EXIT.usage} and prints the command's usage. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

const AUTH_CODES = new Set(["unauthorized", "version_mismatch", "rate_limited", "auth_timeout"]);
const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ENOTFOUND",
  "EHOSTUNREACH",
  "ETIMEDOUT",
  "EAI_AGAIN",
]);

/** The exit code for an error thrown by a command. */
export function exitCodeFor(err: unknown): number {
  if (err instanceof UsageError) return EXIT.usage;
  if (err instanceof PhebyError) {
    if (AUTH_CODES.has(err.code) || err.status === 401) return EXIT.auth;
    if (err.code === "connection_closed") return EXIT.connection;
    return EXIT.protocol;
  }
  const code = errnoOf(err);
  if (code && NETWORK_CODES.has(code)) return EXIT.connection;
  // fetch() reports an unreachable server as a bare "fetch failed".
  if (err instanceof TypeError && err.message === "fetch failed") return EXIT.connection;
  if (code) return EXIT.usage;
  return EXIT.protocol;
}

/** The errno code of an error or of its cause (fetch wraps them). */
export function errnoOf(err: unknown): string | undefined {
  for (let e = err; e && typeof e === "object"; e = (e as { cause?: unknown }).cause) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && /^E[A-Z_]+$/.test(code)) return code;
  }
  return undefined;
}

/** A one-line description of an error for stderr; never includes the secret. */
export function describeError(err: unknown): string {
  // A connection failure's message already says what failed (refused, DNS, TLS, HTTP status).
  if (err instanceof PhebyError)
    return err.code === "connection_closed" ? err.message : `${err.code}: ${err.message}`;
  const code = errnoOf(err);
  const message = err instanceof Error ? err.message : String(err);
  return code && !message.includes(code) ? `${message} (${code})` : message;
}
