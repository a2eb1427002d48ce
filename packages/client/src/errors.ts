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
   * @param extra `status`: HTTP status (of a file request, or of a refused WebSocket upgrade);
   * `cause`: the runtime's underlying error (e.g. Node's `ECONNREFUSED`), when known.
   */
  constructor(
    code: PhebyErrorCode,
    message: string,
    extra: { status?: number; requestId?: string; cause?: unknown } = {},
  ) {
    super(message, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.code = code;
    if (extra.status !== undefined) this.status = extra.status;
    if (extra.requestId !== undefined) this.requestId = extra.requestId;
  }
}
