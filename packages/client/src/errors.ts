import type { ErrorCode } from "@pheby/protocol";

/** Codes a {@link PhebyError} can carry: the spec's codes plus client-side conditions. */
export type PhebyErrorCode = ErrorCode | "connection_closed" | "timeout" | "invalid_frame";

/** An error with a machine-readable code. Requests reject with it, carrying the server's code. */
export class PhebyError extends Error {
  override readonly name = "PhebyError";
  /** The spec's error code, or a client-side one (`connection_closed`, `timeout`, `invalid_frame`). */
  readonly code: PhebyErrorCode;
  /** HTTP status, for upload/download failures and for a WebSocket upgrade the server refused. */
  readonly status?: number;
  /** The request's `request_id`, when the error answers a request. */
  readonly requestId?: string;
  /**
   * For `rate_limited`: how long the server asked the client to wait before trying again (from the
   * `retry after N s` its message or close reason carries, or HTTP `Retry-After`), when it said.
   */
  readonly retryAfterMs?: number;

  /**
   * @param extra `status`: HTTP status (of a file request, or of a refused WebSocket upgrade);
   * `cause`: the runtime's underlying error (e.g. Node's `ECONNREFUSED`), when known;
   * `retryAfterMs`: the wait an answer asked for; a `rate_limited` error without it takes the wait its
   * message names (`retry after N s`).
   */
  constructor(
    code: PhebyErrorCode,
    message: string,
    extra: { status?: number; requestId?: string; cause?: unknown; retryAfterMs?: number } = {},
  ) {
    super(message, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.code = code;
    if (extra.status !== undefined) this.status = extra.status;
    if (extra.requestId !== undefined) this.requestId = extra.requestId;
    // Parsed here once, so every way a lockout reaches the caller (reply, close, HTTP) carries its wait.
    const wait = extra.retryAfterMs ?? (code === "rate_limited" ? retryAfterMs(message) : undefined);
    if (wait !== undefined) this.retryAfterMs = wait;
  }
}

/**
 * The wait a lockout names, in ms: a `rate_limited` message and a 4429 close reason end with
 * `retry after N s` (docs/protocol.md, close codes). Undefined when the text names none.
 */
export function retryAfterMs(text: string | undefined): number | undefined {
  const seconds = /retry after (\d+) s\b/i.exec(text ?? "")?.[1];
  return seconds === undefined ? undefined : Number(seconds) * 1000;
}
