import type { ErrorCode, ServerMessage } from "@pheby/protocol";
import { CLOSE_CODES } from "@pheby/protocol";
import type { Logger } from "pino";
import { WebSocket } from "ws";
import { iso } from "../util/time.js";

/** How long a connection closed for being slow may take to flush its close frame before it is destroyed. */
const SLOW_CLOSE_GRACE_MS = 5_000;

/** What a connection needs from the server. */
export interface ConnectionDeps {
  log: Logger;
  now(): number;
  maxBufferedBytes: number;
}

let nextId = 1;

/**
 * One WebSocket peer: its authentication state, liveness for the heartbeat,
 * and a send path that enforces the per-client send-buffer cap.
 */
export class Connection {
  readonly id = nextId++;
  authenticated = false;
  /** Cleared on every heartbeat tick and set by the peer's pong. */
  alive = true;

  constructor(
    readonly ws: WebSocket,
    readonly addr: string,
    private readonly deps: ConnectionDeps,
  ) {}

  get open(): boolean {
    return this.ws.readyState === WebSocket.OPEN;
  }

  /** Send one message to this peer. */
  send(msg: ServerMessage): void {
    this.sendRaw(JSON.stringify(msg), msg.type);
  }

  /**
   * Send an already-serialised frame (broadcasts serialise once). When what
   * is still queued for this peer from earlier sends exceeds the cap, the peer
   * is not keeping up: it is closed with 4503 instead, so one slow reader
   * cannot grow server memory without bound (at most the cap plus one frame).
   * Checking before the send means one large frame never trips it by itself.
   */
  sendRaw(data: string, type: string): void {
    if (!this.open) return;
    if (this.ws.bufferedAmount > this.deps.maxBufferedBytes) {
      this.deps.log.warn(
        { conn: this.id, buffered: this.ws.bufferedAmount },
        "slow consumer: send buffer over cap, closing",
      );
      this.close(CLOSE_CODES.slowConsumer, "slow consumer");
      // The close frame queues behind the unread data; a peer that never reads is destroyed after a grace.
      setTimeout(() => this.ws.terminate(), SLOW_CLOSE_GRACE_MS).unref();
      return;
    }
    this.ws.send(data);
    this.deps.log.debug({ conn: this.id, type }, "frame out");
  }

  /** Send an `error` frame (echoing `requestId` when there is one). */
  error(code: ErrorCode, message: string, requestId?: string): void {
    this.send({
      type: "error",
      ...(requestId === undefined ? {} : { request_id: requestId }),
      error: { code, message },
      ts: iso(this.deps.now()),
    });
  }

  close(code: number, reason = ""): void {
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) {
      this.ws.close(code, reason);
    }
  }
}

/** The set of authenticated connections; broadcasts reach every one of them. */
export class Hub {
  readonly #clients = new Set<Connection>();

  add(conn: Connection): void {
    this.#clients.add(conn);
  }

  remove(conn: Connection): void {
    this.#clients.delete(conn);
  }

  get size(): number {
    return this.#clients.size;
  }

  connections(): Iterable<Connection> {
    return this.#clients;
  }

  /** Send one event to every authenticated connection (no `request_id` unless the caller set one). */
  broadcast(msg: ServerMessage): void {
    const data = JSON.stringify(msg);
    for (const conn of this.#clients) conn.sendRaw(data, msg.type);
  }

  /**
   * Send an event that is also the reply to `from`'s request: every
   * connection gets it, and only `from`'s copy carries `requestId`. One
   * event per connection, in the same order as any broadcast that follows.
   */
  broadcastReply(msg: ServerMessage, from: Connection, requestId: string | undefined): void {
    const data = JSON.stringify(msg);
    for (const conn of this.#clients) {
      if (conn === from && requestId !== undefined) conn.send({ ...msg, request_id: requestId });
      else conn.sendRaw(data, msg.type);
    }
  }
}
