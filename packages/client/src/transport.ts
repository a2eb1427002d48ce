// Why a server could not be reached: from a WebSocket's 'error' event, or a failed fetch. Node's
// `ws` puts the underlying error on the event (errno codes, TLS failures, and
// "Unexpected server response: <status>" for a refused upgrade); browsers
// deliberately give no detail, so there this finds nothing. Also what PhebyClient
// and pairDevice both read off a raw socket (a frame's text, a lockout close).
// Only property reads: safe to bundle for browsers.
import { CLOSE_CODES } from "@pheby/protocol";
import { PhebyError } from "./errors.js";

/** A failed connection attempt, described for people. */
export interface TransportFailure {
  /** What failed, e.g. "connection refused by 127.0.0.1:8620 (is the server running on that port?)". */
  message: string;
  /** The HTTP status the server answered the WebSocket upgrade with, if that is what failed. */
  status?: number;
  /** The runtime's own error. */
  cause: Error;
}

const TLS_CODE = /CERT|SSL|TLS|EPROTO|ERR_SSL/;

/** Describe the 'error' event of a socket that failed to open, or `undefined` when the runtime says nothing. */
export function transportFailure(event: unknown, url: string): TransportFailure | undefined {
  const e = (event ?? {}) as { error?: unknown; message?: unknown };
  if (e.error instanceof Error) return describeFailure(e.error, url);
  if (typeof e.message === "string" && e.message !== "") return describeFailure(new Error(e.message), url);
  return undefined;
}

/** The errno-style code of an error or of its causes (Node's fetch wraps them: "fetch failed" ← ECONNREFUSED). */
function codeOf(err: Error): { code?: string; detail: string } {
  for (let e: unknown = err; e && typeof e === "object"; e = (e as { cause?: unknown }).cause) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string") return { code, detail: (e as { message?: string }).message ?? err.message };
  }
  return { detail: err.message };
}

/** Say what failed when `url` could not be reached: refused, DNS, TLS, an HTTP status at the upgrade, or else. */
export function describeFailure(cause: Error, url: string): TransportFailure {
  let where: URL | undefined;
  try {
    where = new URL(url);
  } catch {
    where = undefined;
  }
  const host = where?.host ?? url;
  const { code, detail } = codeOf(cause);
  const status = /Unexpected server response: (\d{3})/.exec(cause.message)?.[1];
  if (status)
    return {
      message: `${host} answered the WebSocket upgrade with HTTP ${status} (is ${where?.pathname ?? "the path"} the server's WebSocket endpoint, and does any proxy pass WebSockets through?)`,
      status: Number(status),
      cause,
    };
  if (code === "ECONNREFUSED")
    return { message: `connection refused by ${host} (is the server running on that port?)`, cause };
  if (code === "ENOTFOUND" || code === "EAI_AGAIN")
    return { message: `cannot resolve the host name ${where?.hostname ?? host} (DNS: ${code})`, cause };
  if ((code !== undefined && TLS_CODE.test(code)) || /certificate|SSL routines|TLS/i.test(detail))
    return { message: `TLS handshake with ${host} failed: ${detail}${code ? ` (${code})` : ""}`, cause };
  const suffix = code !== undefined && !detail.includes(code) ? ` (${code})` : "";
  return { message: `cannot reach ${host}: ${detail}${suffix}`, cause };
}

/** A WebSocket message's text: runtimes hand text frames over as strings, some as bytes. */
export function frameText(data: unknown): string {
  return typeof data === "string" ? data : new TextDecoder().decode(data as ArrayBuffer);
}

/**
 * The error a close means when it is the server's only answer: a lockout (4429) is `rate_limited`,
 * with the wait its reason names (docs/protocol.md, close codes). Undefined for any other close.
 */
export function lockoutError(close: { code: number; reason: string }): PhebyError | undefined {
  if (close.code !== CLOSE_CODES.lockedOut) return undefined;
  return new PhebyError("rate_limited", `locked out: ${close.reason || "no wait given"}`);
}
