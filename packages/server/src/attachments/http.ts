import type { ServerResponse } from "node:http";
import { pipeline } from "node:stream/promises";
import type { HttpBindings } from "@hono/node-server";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import { type ErrorCode, LIMITS } from "@pheby/protocol";
import type { Context, Hono } from "hono";
import type { Logger } from "pino";
import { clientAddress } from "../auth/address.js";
import { presentedSecrets } from "../auth/http.js";
import type { Lockout } from "../auth/lockout.js";
import { type Principal, principalLog } from "../auth/principal.js";
import type { Transfers } from "../auth/transfers.js";
import type { Store } from "../store/store.js";
import { abortable } from "../util/abortable.js";
import { contentDisposition, sanitiseFilename } from "./filename.js";
import { parseRange } from "./range.js";
import { AttachmentRejected, type AttachmentStore } from "./store.js";

/** What the attachment routes need. */
export interface AttachmentRouteDeps {
  attachments: AttachmentStore;
  store: Store;
  /**
   * Who the presented secrets authenticate (the master secret or a device's), comparing every one
   * in constant time; undefined when none does.
   */
  authenticate(presented: readonly string[]): Principal | undefined;
  lockout: Lockout;
  /** A device's requests are tracked here while they run, so revoking it cuts them. */
  transfers: Transfers;
  log: Logger;
  /** An upload that sends no byte for this long is abandoned with 408 (see {@link PhebyServerOptions.httpIdleTimeoutMs}). */
  idleTimeoutMs: number;
}

type Env = { Bindings: HttpBindings };

/** The spec's exact body for an unknown, expired or malformed attachment ID. */
export const UNAVAILABLE = { error: { code: "not_found", message: "Attachment unavailable" } } as const;

const fail = (c: Context<Env>, status: 400 | 401 | 408 | 413 | 429, code: ErrorCode, message: string) =>
  c.json({ error: { code, message } }, status);

/**
 * Authenticate a request with the master secret or a device secret. Missing
 * credentials → 401. Wrong credentials → 401 and a failure counted towards the
 * same per-address lockout as failed hellos (the HTTP routes take the same
 * secrets, so they must not be an unthrottled guessing oracle). A locked-out
 * address gets 429 `rate_limited` whatever it presents. A device's request is
 * tracked until its response ends: revoking the device destroys its socket,
 * which ends a download and fails an upload (whose partial file is removed).
 */
function authenticate(c: Context<Env>, deps: AttachmentRouteDeps): Response | undefined {
  const { incoming, outgoing } = c.env;
  const addr = clientAddress(incoming.socket.remoteAddress, incoming.headers["x-forwarded-for"]);
  if (deps.lockout.isLocked(addr)) {
    return fail(c, 429, "rate_limited", "Too many failed attempts from this address; try again later");
  }
  const presented = presentedSecrets(incoming.headers);
  if (presented.length === 0) return fail(c, 401, "unauthorized", "Missing credentials");
  const principal = deps.authenticate(presented);
  if (!principal) {
    const locked = deps.lockout.fail(addr);
    deps.log.warn({ addr, locked, route: c.req.routePath }, "HTTP request rejected: wrong secret");
    return fail(c, 401, "unauthorized", "Invalid credentials");
  }
  deps.lockout.succeed(addr);
  if (principal.kind === "device") {
    const done = deps.transfers.track(principal.deviceId, () => {
      deps.log.info(
        { ...principalLog(principal), route: c.req.routePath },
        "HTTP transfer cut: device revoked",
      );
      incoming.socket.destroy();
    });
    outgoing.once("close", done);
  }
  return undefined;
}

/** Add `POST /attachments` and `GET /attachments/:id` to the app. */
export function attachmentRoutes(app: Hono<Env>, deps: AttachmentRouteDeps): void {
  app.post("/attachments", async (c) => {
    const denied = authenticate(c, deps);
    if (denied) return denied;
    const { incoming } = c.env;
    const conversationId = c.req.query("conversation_id");
    if (!conversationId || !deps.store.getConversation(conversationId)) {
      return fail(c, 400, "bad_request", "conversation_id: unknown conversation");
    }
    const filename = sanitiseFilename(c.req.query("filename"));
    if (filename === undefined) return fail(c, 400, "bad_request", "filename: missing or empty");
    const declared = Number(incoming.headers["content-length"] ?? Number.NaN);
    if (declared > LIMITS.uploadBytes) return tooLarge(c);
    if (declared === 0) return fail(c, 400, "bad_request", "empty body");
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
        return err.reason === "too_large" ? tooLarge(c) : fail(c, 400, "bad_request", "empty body");
      }
      if (stalled.signal.aborted) {
        deps.log.info({ conversation: conversationId }, "upload stalled; partial file removed");
        c.header("Connection", "close");
        const seconds = deps.idleTimeoutMs / 1000;
        return fail(c, 408, "bad_request", `No upload data for ${seconds} s; the upload was abandoned`);
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
    const denied = authenticate(c, deps);
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
  app.get("/attachments/*", (c) => authenticate(c, deps) ?? c.json(UNAVAILABLE, 404));
}

function tooLarge(c: Context<Env>): Response {
  // The rest of the body is not read: close the connection after the answer.
  c.header("Connection", "close");
  return fail(c, 413, "too_large", `Attachment exceeds ${LIMITS.uploadBytes} bytes`);
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
