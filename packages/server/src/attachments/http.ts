import type { ServerResponse } from "node:http";
import { pipeline } from "node:stream/promises";
import type { HttpBindings } from "@hono/node-server";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import { LIMITS } from "@pheby/protocol";
import type { Context, Hono } from "hono";
import type { Logger } from "pino";
import { authenticateHttp, type HttpAuthDeps, httpError } from "../auth/http.js";
import type { Store } from "../store/store.js";
import { abortable } from "../util/abortable.js";
import { contentDisposition, sanitiseFilename } from "./filename.js";
import { parseRange } from "./range.js";
import { AttachmentRejected, type AttachmentStore } from "./store.js";

/** What the attachment routes need (credentials as every authenticated HTTP route). */
export interface AttachmentRouteDeps extends HttpAuthDeps {
  attachments: AttachmentStore;
  store: Store;
  /** An upload that sends no byte for this long is abandoned with 408 (see {@link PhebyServerOptions.httpIdleTimeoutMs}). */
  idleTimeoutMs: number;
}

type Env = { Bindings: HttpBindings };

/** The spec's exact body for an unknown, expired or malformed attachment ID. */
export const UNAVAILABLE = { error: { code: "not_found", message: "Attachment unavailable" } } as const;

/**
 * The filesystem (or the database on it) has no room left: `ENOSPC`, a quota (`EDQUOT`), or
 * SQLite's `SQLITE_FULL` when the index row cannot be written.
 */
function diskFull(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === "ENOSPC" || code === "EDQUOT" || code === "SQLITE_FULL";
}

/** Add `POST /attachments` and `GET /attachments/:id` to the app. */
export function attachmentRoutes(app: Hono<Env>, deps: AttachmentRouteDeps): void {
  app.post("/attachments", async (c) => {
    const denied = authenticateHttp(c, deps);
    if (denied) return denied;
    const { incoming } = c.env;
    const conversationId = c.req.query("conversation_id");
    if (!conversationId || !deps.store.getConversation(conversationId)) {
      return httpError(c, 400, "bad_request", "conversation_id: unknown conversation");
    }
    const filename = sanitiseFilename(c.req.query("filename"));
    if (filename === undefined) return httpError(c, 400, "bad_request", "filename: missing or empty");
    const declared = Number(incoming.headers["content-length"] ?? Number.NaN);
    if (declared > LIMITS.uploadBytes) return tooLarge(c);
    if (declared === 0) return httpError(c, 400, "bad_request", "empty body");
    // An idle timeout, not a total one: a slow but steady upload (a phone link) takes as long as it
    // needs; one that sends nothing for idleTimeoutMs is abandoned. The socket's timeout is re-armed
    // by every byte; a listener on the request keeps Node from destroying the socket, so we can answer.
    const stalled = new AbortController();
    incoming.setTimeout(deps.idleTimeoutMs, () => stalled.abort(new Error("upload stalled")));
    // Once the body is in, the wait is ours (fsync of up to 64 MiB on a slow disk), not the client's:
    // no idle cut until the answer. Node re-arms the timeouts for the connection's next request.
    incoming.once("end", () => incoming.setTimeout(0));
    try {
      const body = abortable(incoming.iterator({ destroyOnReturn: false }), stalled.signal);
      const row = await deps.attachments.receive(body, {
        conversationId,
        filename,
        declaredType: incoming.headers["content-type"],
      });
      return c.json({ attachment: deps.attachments.descriptor(row) }, 201);
    } catch (err) {
      if (err instanceof AttachmentRejected) {
        return err.reason === "too_large" ? tooLarge(c) : httpError(c, 400, "bad_request", "empty body");
      }
      if (stalled.signal.aborted) {
        deps.log.info({ conversation: conversationId }, "upload stalled; partial file removed");
        c.header("Connection", "close");
        const seconds = deps.idleTimeoutMs / 1000;
        return httpError(c, 408, "bad_request", `No upload data for ${seconds} s; the upload was abandoned`);
      }
      if (diskFull(err)) {
        // The store removed what it wrote; the rest of the body is not read, so close after answering.
        deps.log.error({ conversation: conversationId }, "upload refused: the server's disk is full");
        c.header("Connection", "close");
        return httpError(c, 507, "internal_error", "The server's disk is full; the file was not stored");
      }
      if (incoming.errored || incoming.destroyed) {
        deps.log.debug(
          { conversation: conversationId },
          "upload aborted by the client; partial file removed",
        );
        return c.body(null, 400);
      }
      throw err;
    }
  });

  app.get("/attachments/:id", async (c) => {
    const denied = authenticateHttp(c, deps);
    if (denied) return denied;
    const blob = await deps.attachments.open(c.req.param("id"));
    if (!blob) return c.json(UNAVAILABLE, 404);
    const { incoming, outgoing } = c.env;
    const range = parseRange(incoming.headers.range, blob.size);
    const headers: Record<string, string | number> = {
      "Content-Type": blob.row.mime_type,
      "Content-Disposition": contentDisposition(blob.row.filename),
      "X-Content-Type-Options": "nosniff",
      "Content-Security-Policy": "default-src 'none'; sandbox",
      "Cache-Control": "private, no-store",
      "Accept-Ranges": "bytes",
    };
    if (range === "unsatisfiable") {
      await blob.handle.close();
      outgoing.writeHead(416, { ...headers, "Content-Range": `bytes */${blob.size}`, "Content-Length": 0 });
      outgoing.end();
      return RESPONSE_ALREADY_SENT;
    }
    const start = range?.start ?? 0;
    const end = range?.end ?? blob.size - 1;
    outgoing.writeHead(range ? 206 : 200, {
      ...headers,
      "Content-Length": end - start + 1,
      ...(range ? { "Content-Range": `bytes ${start}-${end}/${blob.size}` } : {}),
    });
    await stream(blob.handle.createReadStream({ start, end }), outgoing, deps.log, blob.row.id);
    return RESPONSE_ALREADY_SENT;
  });

  // Anything else under /attachments/ (a nested path, a traversal attempt) is an unavailable attachment.
  app.get("/attachments/*", (c) => authenticateHttp(c, deps) ?? c.json(UNAVAILABLE, 404));
}

function tooLarge(c: Context<Env>): Response {
  // The rest of the body is not read: close the connection after the answer.
  c.header("Connection", "close");
  return httpError(c, 413, "too_large", `Attachment exceeds ${LIMITS.uploadBytes} bytes`);
}

/**
 * Pipe a blob to the response; a client that goes away mid-download only ends
 * that response. Logged by attachment ID, never by URL: a client may have put
 * its secret in the query string.
 */
async function stream(
  source: NodeJS.ReadableStream,
  outgoing: ServerResponse,
  log: Logger,
  attachmentId: string,
): Promise<void> {
  try {
    await pipeline(source, outgoing);
  } catch (err) {
    log.debug({ err: (err as Error).message, attachment: attachmentId }, "download ended early");
  }
}
