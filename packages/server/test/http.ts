import { readdirSync } from "node:fs";
import { type IncomingHttpHeaders, request } from "node:http";
import { join } from "node:path";
import type { AttachmentDescriptor } from "@pheby/protocol";
import { SECRET } from "./helpers.js";

/** A raw HTTP exchange's outcome. */
export interface HttpResult {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/**
 * One raw HTTP request with `node:http`, so tests control framing exactly:
 * `body` as one Buffer is sent with Content-Length unless `chunked`; a
 * generator is streamed (chunked unless a content-length header is given).
 * A server that answers before reading the whole body (413) may reset the
 * socket under our writes; the response still counts.
 */
export function http(
  baseUrl: string,
  method: string,
  path: string,
  options: {
    headers?: Record<string, string | number>;
    body?: Buffer | Iterable<Buffer>;
    chunked?: boolean;
    auth?: boolean;
  } = {},
): Promise<HttpResult> {
  // The path is sent as given (no dot-segment normalisation), so traversal attempts reach the server.
  const { hostname, port } = new URL(baseUrl);
  const headers: Record<string, string | number> = {
    ...(options.auth === false ? {} : { authorization: `Bearer ${SECRET}` }),
    ...options.headers,
  };
  const body = options.body;
  if (Buffer.isBuffer(body) && !options.chunked) headers["content-length"] = body.length;
  return new Promise((resolve, reject) => {
    let settled = false;
    const req = request({ host: hostname, port, path, method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        settled = true;
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) });
      });
      res.on("error", (err) => {
        if (!settled) reject(err);
      });
    });
    req.on("error", (err) => {
      // A reset while we were still writing is expected after an early answer; wait for it.
      setTimeout(() => {
        if (!settled) reject(err);
      }, 1_000);
    });
    if (body === undefined) {
      req.end();
    } else if (Buffer.isBuffer(body)) {
      req.end(body);
    } else {
      void (async () => {
        for (const chunk of body) {
          if (req.destroyed) return;
          if (!req.write(chunk)) {
            await new Promise<void>((resolve) => {
              const done = () => {
                req.off("drain", done).off("close", done);
                resolve();
              };
              req.on("drain", done).on("close", done);
            });
          }
        }
        req.end();
      })();
    }
  });
}

/** `n` bytes as 1 MiB chunks (one reused buffer, so the test itself stays small). */
export function* bytes(n: number, fill = 0x61): Generator<Buffer> {
  const mib = Buffer.alloc(1024 * 1024, fill);
  for (let left = n; left > 0; left -= mib.length) yield left >= mib.length ? mib : mib.subarray(0, left);
}

/** Files in the store's blob and temp directories. */
export function storeFiles(dataDir: string): { blobs: string[]; tmp: string[] } {
  const root = join(dataDir, "attachments");
  return { blobs: readdirSync(join(root, "blobs")), tmp: readdirSync(join(root, "tmp")) };
}

/** Upload and return the parsed JSON body and status. */
export async function upload(
  baseUrl: string,
  conversationId: string,
  filename: string,
  body: Buffer,
  contentType = "application/octet-stream",
): Promise<{ status: number; json: { attachment: AttachmentDescriptor } }> {
  const q = new URLSearchParams({ conversation_id: conversationId, filename });
  const res = await http(baseUrl, "POST", `/attachments?${q}`, {
    body,
    headers: { "content-type": contentType },
  });
  return { status: res.status, json: JSON.parse(res.body.toString() || "null") };
}
