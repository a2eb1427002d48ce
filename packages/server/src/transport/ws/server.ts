import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { CLOSE_CODES, type ErrorCode, LIMITS } from "@pheby/protocol";
import type { Logger } from "pino";
import { type RawData, type WebSocket, WebSocketServer } from "ws";
import { clientAddress, type TrustedProxy } from "../../auth/address.js";
import type { OriginPolicy } from "../../auth/origin.js";
import type { Connections } from "../../connection/connection.js";
import { COMPRESS_MIN_CHARS, WsLink } from "./link.js";

/**
 * ws's own `maxPayload`. Frames up to this size reach the Connection, so a frame
 * over the protocol's 2 MiB limit is answered with a `too_large` error *before*
 * the 1009 close. Beyond this hard cap ws closes with 1009 by itself (no error
 * frame is possible: it stops reading before the payload arrives), which bounds
 * what one peer can make us buffer.
 */
export const HARD_MAX_PAYLOAD = 2 * LIMITS.frameBytes;
/**
 * permessage-deflate as offered when compression is on. Context takeover on the
 * server side is the point: each cumulative delta then costs about its new
 * text, because the previous delta is still in the 32 KiB window (the price is
 * a zlib context per connection, about 300 KiB, created on the first
 * compressed frame, which is why short frames are never compressed, see
 * {@link COMPRESS_MIN_CHARS}). zlib's default level 6, not 1: level 1 stops matching
 * long repeats early, which made a 16k delta cost ~9× more on the wire. Window
 * bits are left alone: OkHttp fails the handshake if
 * the server answers with `client_max_window_bits`. ws applies `maxPayload`
 * to the inflated size, so a small frame that inflates past it closes with 1009.
 * `client_no_context_takeover`: client frames are small independent requests,
 * and without context takeover ws clients (and OkHttp) send short ones
 * uncompressed, so the server never allocates an inflate context (~40 KiB) for
 * a peer that only said hello.
 */
export const DEFLATE_OPTIONS = { threshold: COMPRESS_MIN_CHARS, clientNoContextTakeover: true } as const;
/** How long closing peers get to complete the close handshake on shutdown. */
const SHUTDOWN_GRACE_MS = 1_000;

/** Settings of the WebSocket endpoint. */
export interface WsSettings {
  log: Logger;
  heartbeatIntervalMs: number;
  maxBufferedBytes: number;
  /** Offer permessage-deflate ({@link DEFLATE_OPTIONS}). */
  compression: boolean;
  /** The browser origins that may connect; a handshake from any other gets 403. */
  origins: OriginPolicy;
  /** Whose `X-Forwarded-For` names the client's address. */
  trustedProxy: TrustedProxy;
}

/** Answer an upgrade request with a plain HTTP error and close: no WebSocket, no connection. */
function refuse(socket: Duplex, status: "403 Forbidden" | "404 Not Found", code: ErrorCode, message: string) {
  const body = JSON.stringify({ error: { code, message } });
  socket.end(
    `HTTP/1.1 ${status}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/** One inbound message as one buffer (ws hands fragmented ones over as a list). */
function toBuffer(data: RawData): Buffer {
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.isBuffer(data) ? data : Buffer.from(data);
}

/**
 * The `/ws` transport: upgrade, permessage-deflate, `maxPayload`, the
 * ws-level heartbeat, the send-buffer cap (in {@link WsLink}) and shutdown.
 * Everything the protocol says about a connection is its Connection's.
 */
export class WsTransport {
  readonly #wss: WebSocketServer;
  readonly #links = new Set<WsLink>();
  readonly #heartbeat: NodeJS.Timeout;
  #closing = false;

  constructor(
    private readonly connections: Connections,
    private readonly settings: WsSettings,
  ) {
    this.#wss = new WebSocketServer({
      noServer: true,
      maxPayload: HARD_MAX_PAYLOAD,
      perMessageDeflate: settings.compression ? DEFLATE_OPTIONS : false,
      clientTracking: false,
    });
    this.#heartbeat = setInterval(() => this.#beat(), settings.heartbeatIntervalMs);
    this.#heartbeat.unref();
  }

  /**
   * The HTTP server's `upgrade` listener. Only `/ws` upgrades; anything else gets a bare 404. A
   * handshake from a browser page of another origin gets 403 before any connection exists, so it can
   * send no hello and count no failure against its address.
   */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const path = (req.url ?? "/").split("?")[0];
    if (path !== "/ws" || this.#closing) {
      refuse(socket, "404 Not Found", "not_found", "Not found");
      return;
    }
    socket.on("error", () => {});
    const { origin, host } = req.headers;
    if (!this.settings.origins.allows(origin, host)) {
      this.settings.log.warn(
        { origin: origin?.slice(0, 200), addr: this.#address(req) },
        "WebSocket refused: a page of another origin",
      );
      refuse(socket, "403 Forbidden", "unauthorized", "This origin may not connect");
      return;
    }
    this.#wss.handleUpgrade(req, socket, head, (ws) => this.#accept(ws, req));
  }

  #accept(ws: WebSocket, req: IncomingMessage): void {
    const { log, maxBufferedBytes } = this.settings;
    const addr = this.#address(req);
    const link = new WsLink(ws, addr, { log, maxBufferedBytes });
    this.#links.add(link);
    ws.on("pong", () => {
      link.alive = true;
    });
    ws.on("error", (err) => log.debug({ conn: link.id, err: err.message }, "socket error"));
    const connection = this.connections.open(link);
    ws.on("close", (code) => {
      this.#links.delete(link);
      connection.closed(code);
    });
    ws.on("message", (data) => connection.receive(toBuffer(data)));
  }

  #address(req: IncomingMessage): string {
    return clientAddress(
      req.socket.remoteAddress,
      req.headers["x-forwarded-for"],
      this.settings.trustedProxy,
    );
  }

  /** ws-level heartbeat: a peer that did not answer the previous ping is dropped. */
  #beat(): void {
    for (const link of this.#links) {
      if (!link.alive) {
        this.settings.log.debug({ conn: link.id }, "heartbeat missed; terminating");
        link.ws.terminate();
        continue;
      }
      link.alive = false;
      link.ws.ping();
    }
  }

  /** Close every socket with 1001 going-away; stragglers are destroyed after a short grace. */
  async close(): Promise<void> {
    this.#closing = true;
    clearInterval(this.#heartbeat);
    const pending = [...this.#links].map(
      (link) =>
        new Promise<void>((resolve) => {
          const timer = setTimeout(() => {
            link.ws.terminate();
            resolve();
          }, SHUTDOWN_GRACE_MS);
          link.ws.once("close", () => {
            clearTimeout(timer);
            resolve();
          });
          link.close(CLOSE_CODES.goingAway, "server shutdown");
        }),
    );
    await Promise.all(pending);
    this.#wss.close();
  }
}
