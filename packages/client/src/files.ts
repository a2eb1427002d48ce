import { type AttachmentDescriptor, ErrorBody, type ErrorCode, UploadResponse } from "@pheby/protocol";
import { PhebyError } from "./errors.js";
import { describeFailure } from "./transport.js";
import { hasXhr, xhrPost } from "./xhr.js";

/** What can be uploaded: a file path (Node only), a Blob, bytes, or a byte stream. */
export type UploadSource = string | Blob | Uint8Array | ReadableStream<Uint8Array>;

/** Progress callback: bytes so far, and the total when known. */
export type ProgressCallback = (transferred: number, total: number | undefined) => void;

/** Options shared by uploads and downloads. */
export interface FileClientOptions {
  /** WebSocket or HTTP URL of the server; `/ws` is stripped to find the HTTP base. */
  url: string;
  secret: string;
  /** fetch implementation (default: the global one). */
  fetch?: typeof fetch;
}

/** Result of a download. */
export interface DownloadResult {
  status: number;
  contentType: string | null;
  /** Bytes received. */
  size: number;
  /** The filename from Content-Disposition, if any. */
  filename: string | null;
  /** The bytes, when no `to` destination was given. */
  bytes?: Uint8Array;
}

/** The HTTP base URL for a ws(s):// or http(s):// server URL. */
export function httpBase(url: string): string {
  const u = new URL(url);
  if (u.protocol === "ws:") u.protocol = "http:";
  if (u.protocol === "wss:") u.protocol = "https:";
  u.pathname = u.pathname.replace(/\/ws\/?$/, "/");
  u.search = "";
  u.hash = "";
  return u.toString().replace(/\/$/, "");
}

function counting(
  stream: ReadableStream<Uint8Array>,
  total: number | undefined,
  onProgress?: ProgressCallback,
) {
  if (!onProgress) return stream;
  let transferred = 0;
  return stream.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        transferred += chunk.byteLength;
        onProgress(transferred, total);
        controller.enqueue(chunk);
      },
    }),
  );
}

async function toStream(
  source: UploadSource,
): Promise<{ stream: ReadableStream<Uint8Array>; size?: number; name?: string }> {
  if (typeof source === "string") {
    const [{ createReadStream }, { stat }, { Readable }, { basename }] = await Promise.all([
      import("node:fs"),
      import("node:fs/promises"),
      import("node:stream"),
      import("node:path"),
    ]);
    const { size } = await stat(source);
    const stream = Readable.toWeb(createReadStream(source)) as unknown as ReadableStream<Uint8Array>;
    return { stream, size, name: basename(source) };
  }
  if (source instanceof Uint8Array) {
    return { stream: new Blob([source as Uint8Array<ArrayBuffer>]).stream(), size: source.byteLength };
  }
  if (source instanceof Blob) return { stream: source.stream(), size: source.size };
  return { stream: source };
}

function asBlob(source: UploadSource): Blob | undefined {
  if (source instanceof Blob) return source;
  if (source instanceof Uint8Array) return new Blob([source as Uint8Array<ArrayBuffer>]);
  return undefined;
}

/**
 * fetch, with a failure to reach the server (not an abort) turned into a `connection_closed` saying why.
 * @internal Shared with the answer routes (http-answers.ts).
 */
export async function send(options: FileClientOptions, url: string, init: RequestInit): Promise<Response> {
  try {
    return await (options.fetch ?? fetch)(url, init);
  } catch (err) {
    if (!(err instanceof Error) || err.name === "AbortError") throw err;
    const failure = describeFailure(err, url);
    throw new PhebyError("connection_closed", failure.message, { cause: err });
  }
}

/** @internal The {@link PhebyError} of an HTTP error answer: its body's code and message, its status and Retry-After. */
export async function httpError(response: Response): Promise<PhebyError> {
  let code: ErrorCode =
    response.status === 401 ? "unauthorized" : response.status === 404 ? "not_found" : "bad_request";
  let message = `HTTP ${response.status}`;
  try {
    const body = ErrorBody.safeParse(await response.json());
    if (body.success) ({ code, message } = body.data.error);
  } catch {
    /* not JSON */
  }
  // A `rate_limited` message's own `retry after N s` is read by PhebyError; the header is HTTP's way.
  const header = response.headers.get("retry-after");
  return new PhebyError(code, message, {
    status: response.status,
    ...(header && /^\d+$/.test(header) ? { retryAfterMs: Number(header) * 1000 } : {}),
  });
}

/**
 * Upload a file to a conversation (`POST /attachments`), streaming the body.
 * In browsers, Blobs and bytes are sent with XMLHttpRequest instead (real
 * upload progress, and no HTTP/2 requirement); a ReadableStream source there
 * still needs an HTTP/2 server.
 * Resolves with the stored attachment's descriptor. Claim it by passing its
 * `attachment_id` in `chat.send`'s `attachment_ids`.
 */
export async function uploadAttachment(
  options: FileClientOptions,
  conversationId: string,
  source: UploadSource,
  extra: {
    filename?: string;
    contentType?: string;
    onProgress?: ProgressCallback;
    signal?: AbortSignal;
  } = {},
): Promise<AttachmentDescriptor> {
  // In browsers a Blob (or bytes) goes through XHR: see xhrPost for why.
  const blob = hasXhr() && !options.fetch ? asBlob(source) : undefined;
  const { stream, size, name } = blob
    ? { stream: undefined, size: blob.size, name: undefined }
    : await toStream(source);
  const filename =
    extra.filename ?? name ?? (source instanceof File ? source.name : undefined) ?? "upload.bin";
  const contentType =
    extra.contentType ?? (source instanceof Blob && source.type ? source.type : "application/octet-stream");
  const query = new URLSearchParams({ conversation_id: conversationId, filename });
  const url = `${httpBase(options.url)}/attachments?${query}`;
  const headers: Record<string, string> = {
    authorization: `Bearer ${options.secret}`,
    "content-type": contentType,
  };
  if (size !== undefined) headers["content-length"] = String(size);
  const response = blob
    ? await xhrPost(url, headers, blob, extra.onProgress, extra.signal)
    : await send(options, url, {
        method: "POST",
        headers,
        body: counting(stream!, size, extra.onProgress),
        // Required by Node's fetch for a streamed request body.
        duplex: "half",
        ...(extra.signal ? { signal: extra.signal } : {}),
      } as RequestInit);
  if (response.status !== 201) throw await httpError(response);
  const body = UploadResponse.safeParse(await response.json());
  if (!body.success) throw new PhebyError("invalid_frame", "upload response does not match the protocol");
  return body.data.attachment;
}

/**
 * Download an attachment (`GET /attachments/{id}`). With `to` (a file path in
 * Node, or a WritableStream) the body is streamed there; otherwise the bytes
 * are returned. `range` requests a single byte range (RFC 9110 `Range`).
 */
export async function downloadAttachment(
  options: FileClientOptions,
  attachment: string | Pick<AttachmentDescriptor, "download_path">,
  extra: {
    to?: string | WritableStream<Uint8Array>;
    onProgress?: ProgressCallback;
    range?: string;
    signal?: AbortSignal;
  } = {},
): Promise<DownloadResult> {
  const path =
    typeof attachment === "string"
      ? `/attachments/${encodeURIComponent(attachment)}`
      : attachment.download_path;
  const headers: Record<string, string> = { authorization: `Bearer ${options.secret}` };
  if (extra.range) headers.range = extra.range.startsWith("bytes=") ? extra.range : `bytes=${extra.range}`;
  const response = await send(options, `${httpBase(options.url)}${path}`, {
    headers,
    ...(extra.signal ? { signal: extra.signal } : {}),
  });
  if (response.status !== 200 && response.status !== 206) throw await httpError(response);
  const lengthHeader = response.headers.get("content-length");
  const total = lengthHeader === null ? undefined : Number(lengthHeader);
  const disposition = response.headers.get("content-disposition") ?? "";
  const star = /filename\*=UTF-8''([^;]+)/i.exec(disposition);
  const plain = /filename="([^"]*)"/i.exec(disposition);
  const filename = star ? decodeURIComponent(star[1]!) : (plain?.[1] ?? null);
  let size = 0;
  const body = counting(response.body ?? new Blob([]).stream(), total, (n, t) => {
    size = n;
    extra.onProgress?.(n, t);
  });
  const result = { status: response.status, contentType: response.headers.get("content-type"), filename };
  if (extra.to === undefined) {
    const bytes = new Uint8Array(await new Response(body).arrayBuffer());
    return { ...result, size: bytes.byteLength, bytes };
  }
  if (typeof extra.to === "string") {
    const [{ createWriteStream }, { Writable }] = await Promise.all([
      import("node:fs"),
      import("node:stream"),
    ]);
    await body.pipeTo(Writable.toWeb(createWriteStream(extra.to)) as WritableStream<Uint8Array>);
  } else {
    await body.pipeTo(extra.to);
  }
  return { ...result, size };
}
