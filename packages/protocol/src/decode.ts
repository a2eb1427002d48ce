import type { z } from "zod/v3";
import { type ErrorCode, LIMITS } from "./constants.js";
import {
  type ClientMessage,
  type ClientMessageType,
  clientMessageSchemas,
  type ServerMessage,
  type ServerMessageType,
  serverMessageSchemas,
} from "./messages.js";

/** A protocol error produced while decoding a frame. */
export interface DecodeError {
  /** One of `invalid_json`, `unknown_type`, `bad_request`, `too_large`. */
  code: Extract<ErrorCode, "invalid_json" | "unknown_type" | "bad_request" | "too_large">;
  /** Names the offending field; never echoes a value (so never a secret). */
  message: string;
  /** The frame's `request_id`, when it had a usable one, so the error can echo it. */
  request_id?: string;
}

/** Result of decoding one frame. */
export type DecodeResult<M> = { ok: true; message: M } | { ok: false; error: DecodeError };

/** A raw WebSocket frame as the runtime hands it over. */
export type RawFrame = string | Uint8Array | ArrayBuffer;

const utf8 = new TextDecoder("utf-8", { fatal: true });
const encoder = new TextEncoder();

function byteLength(raw: RawFrame): number {
  if (typeof raw === "string") return encoder.encode(raw).byteLength;
  return raw.byteLength;
}

function toText(raw: RawFrame): string | undefined {
  if (typeof raw === "string") return raw;
  try {
    return utf8.decode(raw instanceof ArrayBuffer ? new Uint8Array(raw) : raw);
  } catch {
    return undefined;
  }
}

function usableRequestId(value: unknown): string | undefined {
  return typeof value === "string" && value.length <= LIMITS.requestIdChars ? value : undefined;
}

/** Describe the first Zod issue by field path and rule, never by value. */
export function describeIssue(issue: z.ZodIssue): { code: "bad_request" | "too_large"; message: string } {
  const field = issue.path.length ? issue.path.join(".") : "frame";
  const params = (issue as { params?: { phebyCode?: string } }).params;
  const code = params?.phebyCode === "too_large" ? "too_large" : "bad_request";
  switch (issue.code) {
    case "invalid_type":
      return {
        code,
        message:
          issue.received === "undefined" ? `${field} is required` : `${field} must be ${issue.expected}`,
      };
    case "invalid_literal":
      return { code, message: `${field} must be ${JSON.stringify(issue.expected)}` };
    case "invalid_enum_value":
      return { code, message: `${field} must be one of: ${issue.options.join(", ")}` };
    case "too_big":
      return { code, message: `${field} must have at most ${issue.maximum} ${unit(issue.type)}` };
    case "too_small":
      return { code, message: `${field} must have at least ${issue.minimum} ${unit(issue.type)}` };
    case "invalid_string":
      return { code, message: `${field} has an invalid format` };
    default:
      return { code, message: `${field} ${issue.message}` };
  }
}

function unit(type: string): string {
  return type === "array" ? "items" : type === "string" ? "characters" : "";
}

function decodeWith<T extends string, M>(
  raw: RawFrame,
  schemas: Record<T, z.ZodTypeAny>,
  maxBytes: number,
): DecodeResult<M> {
  if (byteLength(raw) > maxBytes) {
    return { ok: false, error: { code: "too_large", message: `frame exceeds ${maxBytes} bytes` } };
  }
  const text = toText(raw);
  let value: unknown;
  try {
    if (text === undefined) throw new Error("not UTF-8");
    value = JSON.parse(text);
  } catch {
    return { ok: false, error: { code: "invalid_json", message: "frame is not valid JSON" } };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { ok: false, error: { code: "bad_request", message: "frame must be a JSON object" } };
  }
  const record = value as Record<string, unknown>;
  const request_id = usableRequestId(record.request_id);
  const withId = (error: Omit<DecodeError, "request_id">): DecodeResult<M> => ({
    ok: false,
    error: request_id === undefined ? error : { ...error, request_id },
  });
  if (typeof record.type !== "string") {
    return withId({ code: "bad_request", message: "type is required and must be a string" });
  }
  if (!Object.hasOwn(schemas, record.type)) {
    return withId({ code: "unknown_type", message: "unknown message type" });
  }
  const parsed = schemas[record.type as T].safeParse(value);
  if (!parsed.success) {
    const issues = parsed.error.issues;
    // A too_large issue wins over other issues so an oversized text is reported as such.
    const first = issues.find((i) => describeIssue(i).code === "too_large") ?? issues[0]!;
    return withId(describeIssue(first));
  }
  return { ok: true, message: parsed.data as M };
}

/**
 * Decode one inbound frame into a typed {@link ClientMessage}, or into the
 * exact protocol error the server must send: `too_large` (over 2 MiB),
 * `invalid_json`, `unknown_type` or `bad_request` (or `too_large` for overlong
 * chat text). Unknown extra fields are dropped (tolerant reader).
 */
export function decodeClientFrame(raw: RawFrame): DecodeResult<ClientMessage> {
  return decodeWith<ClientMessageType, ClientMessage>(raw, clientMessageSchemas, LIMITS.frameBytes);
}

/**
 * Decode one frame from a server into a typed {@link ServerMessage}. Clients
 * use it; server frames have no size limit of their own.
 */
export function decodeServerFrame(raw: RawFrame): DecodeResult<ServerMessage> {
  return decodeWith<ServerMessageType, ServerMessage>(raw, serverMessageSchemas, Number.POSITIVE_INFINITY);
}
