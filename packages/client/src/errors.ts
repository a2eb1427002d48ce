import type { ErrorCode } from "@pheby/protocol";

/** Codes a {@link PhebyError} can carry: the spec's codes plus client-side conditions. */
export type PhebyErrorCode = ErrorCode | "connection_closed" | "timeout" | "invalid_frame";

/** An error with a machine-readable code. Requests reject with it, carrying the server's code. */
export class PhebyError extends Error {
  override readonly name = "PhebyError";
  /** The spec's error code, or a client-side one (`connection_closed`, `timeout`, `invalid_frame`). */
  readonly code: PhebyErrorCode;
  /** HTTP status, for upload/download failures. */
  readonly status?: number;
  /** The request's `request_id`, when the error answers a request. */
  readonly requestId?: string;

  constructor(code: PhebyErrorCode, message: string, extra: { status?: number; requestId?: string } = {}) {
    super(message);
    this.code = code;
    if (extra.status !== undefined) this.status = extra.status;
    if (extra.requestId !== undefined) this.requestId = extra.requestId;
  }
}
