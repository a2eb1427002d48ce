import type { z } from "zod/v3";
import { OpaqueId } from "./common.js";
import { type ErrorCode, LIMITS } from "./constants.js";
import { checkFeatures, type ExtensionMessageType, featureOfType, stripDisabledFields } from "./features.js";
import {
  type ClientMessage,
  type ClientMessageOf,
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
  /**
   * On a schema violation of `approval.respond` or `clarify.respond`, the ID it answers, when that ID
   * is itself valid. The ID is checked before anything else: the server looks it up and answers an
   * unknown, answered or withdrawn one with `approval_not_found` / `clarify_not_found`, whatever else
   * is wrong with the frame, and only a live one with this error.
   */
  answers?: { approval_id: string } | { clarify_id: string };
}

/** The request types whose target ID is checked before the rest of the frame, and that ID's field. */
const ID_FIRST = { "approval.respond": "approval_id", "clarify.respond": "clarify_id" } as const;

/** Result of decoding one frame. */
export type DecodeResult<M> = { ok: true; message: M } | { ok: false; error: DecodeError };

/** A raw WebSocket frame as the runtime hands it over. */
export type RawFrame = string | Uint8Array | ArrayBuffer;

/** What a decoder needs to know about the connection a frame travels on. */
export interface DecodeOptions {
  /**
   * The features enabled on this connection (what `ready.features` listed), e.g. `["delta.append"]`;
   * names this package does not define are ignored. For a `hello`, which negotiates them, pass the
   * features the server supports: its extension fields then count only for features it also asks for
   * in `hello.features` (the ones `ready.features` will list).
   */
  features?: Iterable<string>;
}

/**
 * A client message as {@link decodeClientFrame} returns it without options: a v1 request. No
 * extension type decodes, extension fields are dropped, and a `hello` always has its `secret`.
 */
export type V1ClientMessage =
  | Exclude<ClientMessage, { type: ExtensionMessageType | "hello" }>
  | (ClientMessageOf<"hello"> & { secret: string });

const NO_FEATURES: ReadonlySet<string> = new Set();

function featureSet(features: Iterable<string> | undefined): ReadonlySet<string> {
  if (features === undefined) return NO_FEATURES;
  return features instanceof Set ? (features as ReadonlySet<string>) : new Set(features);
}

/** A hello's own extension fields count for the features both the server supports and it asks for. */
function helloFeatures(frame: Record<string, unknown>, supported: ReadonlySet<string>): ReadonlySet<string> {
  const asked = Array.isArray(frame.features) ? frame.features : [];
  return new Set(asked.filter((f): f is string => typeof f === "string" && supported.has(f)));
}

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

/** The parsed JSON object of a frame, or the error for a frame that is not one. */
function parseFrame(
  raw: RawFrame,
  maxBytes: number,
): { record: Record<string, unknown> } | { error: DecodeError } {
  if (byteLength(raw) > maxBytes) {
    return { error: { code: "too_large", message: `frame exceeds ${maxBytes} bytes` } };
  }
  const text = toText(raw);
  let value: unknown;
  try {
    if (text === undefined) throw new Error("not UTF-8");
    value = JSON.parse(text);
  } catch {
    return { error: { code: "invalid_json", message: "frame is not valid JSON" } };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { error: { code: "bad_request", message: "frame must be a JSON object" } };
  }
  return { record: value as Record<string, unknown> };
}

/** The frame's `request_id` on an error, when it had a usable one. */
function failure<M>(
  record: Record<string, unknown>,
  error: Omit<DecodeError, "request_id">,
): DecodeResult<M> {
  const request_id = usableRequestId(record.request_id);
  return { ok: false, error: request_id === undefined ? error : { ...error, request_id } };
}

/** Validate a parsed frame against the schema of its `type`; `known` filters the types this reader accepts. */
function validate<T extends string, M>(
  record: Record<string, unknown>,
  schemas: Record<T, z.ZodTypeAny>,
  known: (type: string) => boolean,
): DecodeResult<M> {
  if (typeof record.type !== "string") {
    return failure(record, { code: "bad_request", message: "type is required and must be a string" });
  }
  if (!Object.hasOwn(schemas, record.type) || !known(record.type)) {
    return failure(record, { code: "unknown_type", message: "unknown message type" });
  }
  const parsed = schemas[record.type as T].safeParse(record);
  if (!parsed.success) {
    const issues = parsed.error.issues;
    // A too_large issue wins over other issues so an oversized text is reported as such.
    const first = issues.find((i) => describeIssue(i).code === "too_large") ?? issues[0]!;
    const idField = (ID_FIRST as Record<string, "approval_id" | "clarify_id">)[record.type];
    const id = idField && record[idField];
    const idValid = idField && OpaqueId.safeParse(id).success && !issues.some((i) => i.path[0] === idField);
    const answers = idValid ? ({ [idField]: id } as DecodeError["answers"]) : undefined;
    return failure(record, { ...describeIssue(first), ...(answers ? { answers } : {}) });
  }
  return { ok: true, message: parsed.data as M };
}

/**
 * Decode one inbound frame into a typed {@link ClientMessage}, or into the
 * exact protocol error the server must send: `too_large` (over 2 MiB),
 * `invalid_json`, `unknown_type` or `bad_request` (or `too_large` for overlong
 * chat text). Unknown extra fields are dropped (tolerant reader).
 *
 * Extensions are gated by `options.features`, the features the connection
 * enabled: a request type of a feature not enabled is `unknown_type`, exactly
 * like a type that does not exist, and extension fields of features not
 * enabled are dropped before validation, like any unknown field. Without
 * options the connection is taken to have enabled nothing, so the result is
 * always a v1 request ({@link V1ClientMessage}): a server that forgets to pass
 * its connection's features never acts on an extension nobody negotiated.
 *
 * @example
 * ```ts
 * // On the server, per connection: before the handshake, the features the server supports.
 * const decoded = decodeClientFrame(data, { features: conn.authenticated ? conn.features : serverFeatures });
 * ```
 */
export function decodeClientFrame(raw: RawFrame): DecodeResult<V1ClientMessage>;
export function decodeClientFrame(raw: RawFrame, options: DecodeOptions): DecodeResult<ClientMessage>;
export function decodeClientFrame(raw: RawFrame, options: DecodeOptions = {}): DecodeResult<ClientMessage> {
  const parsed = parseFrame(raw, LIMITS.frameBytes);
  if ("error" in parsed) return { ok: false, error: parsed.error };
  const { record } = parsed;
  let enabled = featureSet(options.features);
  if (typeof record.type === "string") {
    if (record.type === "hello") enabled = helloFeatures(record, enabled);
    stripDisabledFields(record, record.type, enabled);
  }
  return validate<ClientMessageType, ClientMessage>(record, clientMessageSchemas, (type) => {
    const feature = featureOfType(type);
    return feature === undefined || enabled.has(feature);
  });
}

/**
 * Decode one frame from a server into a typed {@link ServerMessage}. Clients
 * use it; server frames have no size limit of their own.
 *
 * Without options it accepts every message this package defines, extensions
 * included (a client reads whatever its server sends). With `options.features`
 * it is the strict check that a frame fits the connection: a frame whose type
 * or any field belongs to a feature not in `features` fails (`unknown_type` for
 * the type, `bad_request` naming the field), so a test can prove that a v1
 * connection gets v1 byte for byte (see also {@link checkFeatures}).
 *
 * @example
 * ```ts
 * // In a server test: every frame a v1 connection receives is v1.
 * expect(decodeServerFrame(frame, { features: [] }).ok).toBe(true);
 * ```
 */
export function decodeServerFrame(raw: RawFrame, options: DecodeOptions = {}): DecodeResult<ServerMessage> {
  const parsed = parseFrame(raw, Number.POSITIVE_INFINITY);
  if ("error" in parsed) return { ok: false, error: parsed.error };
  const { record } = parsed;
  const decoded = validate<ServerMessageType, ServerMessage>(record, serverMessageSchemas, () => true);
  if (!decoded.ok || options.features === undefined) return decoded;
  const violation = checkFeatures(record as { type: string }, featureSet(options.features));
  return violation ? failure(record, violation) : decoded;
}
