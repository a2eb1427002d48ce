import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import {
  CLOSE_CODES,
  type DecodeError,
  decodeClientFrame,
  FEATURE_DELTA_APPEND,
  LIMITS,
  PROTOCOL_VERSION,
  type V1ClientMessage,
} from "@pheby/protocol";
import { type RawData, WebSocketServer } from "ws";
import { clientAddress } from "../auth/address.js";
import type { Lockout } from "../auth/lockout.js";
import type { ServerContext } from "../handlers/context.js";
import { dispatch } from "../handlers/index.js";
import { iso } from "../util/time.js";
import { COMPRESS_MIN_CHARS, Connection } from "./connection.js";

/**
 * ws's own `maxPayload`. Frames up to this size reach us, so a frame over the
 * protocol's 2 MiB limit is answered with a `too_large` error *before* the
 * 1009 close. Beyond this hard cap ws closes with 1009 by itself (no error
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
/** The `hello.features` this server can enable (Pheby extensions of v1; others are ignored). */
export const SERVER_FEATURES: readonly string[] = [FEATURE_DELTA_APPEND];
/** How long closing peers get to complete the close handshake on shutdown. */
const SHUTDOWN_GRACE_MS = 1_000;

/** Settings of the WebSocket endpoint. */
export interface SocketSettings {
  checkSecret(candidate: string): boolean;
  lockout: Lockout;
  authTimeoutMs: number;
  heartbeatIntervalMs: number;
  maxBufferedBytes: number;
  /** Offer permessage-deflate ({@link DEFLATE_OPTIONS}). */
  compression: boolean;
  serverName: string;
}

function frameBytes(data: RawData): number {
  if (Array.isArray(data)) return data.reduce((n, b) => n + b.byteLength, 0);
  return data.byteLength;
}

/**
 * The `/ws` endpoint: upgrade, handshake (hello/ready, timeout, lockout),
 * frame decoding and size limits, the ws-level heartbeat, and shutdown.
 */
export class SocketServer {
  readonly #wss: WebSocketServer;
  readonly #conns = new Set<Connection>();
  readonly #heartbeat: NodeJS.Timeout;
  #closing = false;

  constructor(
    private readonly ctx: ServerContext,
    private readonly settings: SocketSettings,
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

  /** The HTTP server's `upgrade` listener. Only `/ws` upgrades; anything else gets a bare 404. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const path = (req.url ?? "/").split("?")[0];
    if (path !== "/ws" || this.#closing) {
      const body = '{"error":{"code":"not_found","message":"Not found"}}';
      socket.end(
        `HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
      );
      return;
    }
    socket.on("error", () => {});
    this.#wss.handleUpgrade(req, socket, head, (ws) => this.#accept(ws, req));
  }

  #accept(ws: import("ws").WebSocket, req: IncomingMessage): void {
    const { log, clock } = this.ctx;
    const addr = clientAddress(req.socket.remoteAddress, req.headers["x-forwarded-for"]);
    const conn = new Connection(ws, addr, {
      log,
      now: () => clock.now(),
      maxBufferedBytes: this.settings.maxBufferedBytes,
    });
    this.#conns.add(conn);
    log.debug({ conn: conn.id, addr }, "connection open");

    ws.on("pong", () => {
      conn.alive = true;
    });
    ws.on("error", (err) => log.debug({ conn: conn.id, err: err.message }, "socket error"));
    ws.on("close", (code) => {
      clearTimeout(conn.authTimer);
      this.ctx.hub.remove(conn);
      this.#conns.delete(conn);
      log.debug({ conn: conn.id, code }, "connection closed");
    });

    if (this.#refuseIfLocked(conn)) return;
    conn.authTimer = setTimeout(() => {
      if (conn.authenticated || !conn.open) return;
      log.debug({ conn: conn.id }, "auth timeout");
      conn.error("auth_timeout", "No hello received in time");
      conn.close(CLOSE_CODES.authTimeout, "auth timeout");
    }, this.settings.authTimeoutMs);
    ws.on("message", (data) => this.#onFrame(conn, data));
  }

  #onFrame(conn: Connection, data: RawData): void {
    if (!conn.open) return;
    const size = frameBytes(data);
    if (size > LIMITS.frameBytes) {
      this.ctx.log.debug({ conn: conn.id, size }, "frame too large");
      conn.error("too_large", `frame exceeds ${LIMITS.frameBytes} bytes`);
      conn.close(CLOSE_CODES.messageTooBig, "frame too large");
      return;
    }
    const decoded = decodeClientFrame(Array.isArray(data) ? Buffer.concat(data) : data);
    if (!conn.authenticated) {
      this.#hello(conn, decoded.ok ? decoded.message : undefined, decoded.ok ? undefined : decoded.error);
      return;
    }
    if (!decoded.ok) {
      this.ctx.log.debug({ conn: conn.id, code: decoded.error.code }, "frame rejected");
      conn.error(decoded.error.code, decoded.error.message, decoded.error.request_id);
      return;
    }
    this.ctx.log.debug({ conn: conn.id, type: decoded.message.type }, "frame in");
    void dispatch(this.ctx, conn, decoded.message);
  }

  /**
   * Refuse a connection whose address is locked out (`rate_limited`, 4429).
   * Checked when the socket opens and again at its first frame: sockets opened
   * before the lockout must not keep comparing secrets, so an address gets
   * exactly `maxFailures` comparisons per window however many sockets it holds.
   */
  #refuseIfLocked(conn: Connection, requestId?: string): boolean {
    if (!this.settings.lockout.isLocked(conn.addr)) return false;
    this.ctx.log.warn({ conn: conn.id, addr: conn.addr }, "refused: address locked out");
    conn.error("rate_limited", "Too many failed hellos from this address; try again later", requestId);
    conn.close(CLOSE_CODES.lockedOut, "locked out");
    return true;
  }

  /** The first frame: anything but a valid hello with the right secret and version closes the connection. */
  #hello(conn: Connection, msg: V1ClientMessage | undefined, bad: DecodeError | undefined): void {
    const { lockout } = this.settings;
    const log = this.ctx.log;
    if (this.#refuseIfLocked(conn, msg?.request_id ?? bad?.request_id)) return;
    if (msg?.type !== "hello") {
      log.debug({ conn: conn.id, type: msg?.type }, "rejected: first frame is not a valid hello");
      // The spec's hello failures are unauthorized/version_mismatch/auth_timeout; a malformed hello
      // (e.g. bad features) stays unauthorized, and the message names the field (never a value).
      const why = bad
        ? `The first frame must be a valid hello (${bad.message})`
        : "The first frame must be hello";
      conn.error("unauthorized", why, msg?.request_id ?? bad?.request_id);
      conn.close(CLOSE_CODES.unauthorized, "unauthorized");
      return;
    }
    if (!this.settings.checkSecret(msg.secret)) {
      const locked = lockout.fail(conn.addr);
      log.warn({ conn: conn.id, addr: conn.addr, locked }, "rejected: wrong secret");
      conn.error("unauthorized", "Invalid secret", msg.request_id);
      conn.close(CLOSE_CODES.unauthorized, "unauthorized");
      return;
    }
    if (msg.protocol_version !== PROTOCOL_VERSION) {
      const locked = lockout.fail(conn.addr);
      log.warn({ conn: conn.id, version: msg.protocol_version, locked }, "rejected: protocol version");
      conn.error(
        "version_mismatch",
        `Unsupported protocol_version; this server speaks ${PROTOCOL_VERSION}`,
        msg.request_id,
      );
      conn.close(CLOSE_CODES.versionMismatch, "version mismatch");
      return;
    }
    lockout.succeed(conn.addr);
    conn.authenticated = true;
    // Unknown feature names are ignored: a client may ask a newer server's features of an older one.
    const features = msg.features?.filter((f, i, all) => SERVER_FEATURES.includes(f) && all.indexOf(f) === i);
    conn.appendDeltas = features?.includes(FEATURE_DELTA_APPEND) ?? false;
    // An idle connection should not keep its auth timer (and its closure) alive for 10 s.
    clearTimeout(conn.authTimer);
    this.ctx.hub.add(conn);
    log.debug({ conn: conn.id }, "authenticated");
    conn.send({
      type: "ready",
      ...(msg.request_id === undefined ? {} : { request_id: msg.request_id }),
      protocol_version: PROTOCOL_VERSION,
      server: this.settings.serverName,
      // Only when asked, so a v1 client's ready stays exactly as before.
      ...(features === undefined ? {} : { features }),
      ts: iso(this.ctx.clock.now()),
    });
  }

  /** ws-level heartbeat: a peer that did not answer the previous ping is dropped. */
  #beat(): void {
    for (const conn of this.#conns) {
      if (!conn.alive) {
        this.ctx.log.debug({ conn: conn.id }, "heartbeat missed; terminating");
        conn.ws.terminate();
        continue;
      }
      conn.alive = false;
      conn.ws.ping();
    }
  }

  /** Close every socket with 1001 going-away; stragglers are destroyed after a short grace. */
  async close(): Promise<void> {
    this.#closing = true;
    clearInterval(this.#heartbeat);
    const pending = [...this.#conns].map(
      (conn) =>
        new Promise<void>((resolve) => {
          const timer = setTimeout(() => {
            conn.ws.terminate();
            resolve();
          }, SHUTDOWN_GRACE_MS);
          conn.ws.once("close", () => {
            clearTimeout(timer);
            resolve();
          });
          conn.close(CLOSE_CODES.goingAway, "server shutdown");
        }),
    );
    await Promise.all(pending);
    this.#wss.close();
  }
}
