import type { ErrorCode, ServerMessage, ServerMessageOf } from "@pheby/protocol";
import { CLOSE_CODES, deltaOffset } from "@pheby/protocol";
import type { Logger } from "pino";
import { WebSocket } from "ws";
import { iso } from "../util/time.js";

/** How long a connection closed for being slow may take to flush its close frame before it is destroyed. */
const SLOW_CLOSE_GRACE_MS = 5_000;

/**
 * Frames shorter than this are sent uncompressed even when permessage-deflate
 * is on. ws compresses *every* frame under context takeover (its threshold
 * only applies without it), and the first compressed frame allocates a zlib
 * context of ~300 KiB: an idle connection that only ever got `ready` and
 * `pong` would pay it. Acks and pongs gain nothing from compression anyway.
 */
export const COMPRESS_MIN_CHARS = 512;

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
  /** Negotiated `delta.append` in its hello: gets offset + new text instead of cumulative deltas. */
  appendDeltas = false;
  /** Closes the connection if no hello arrives in time; cleared by a successful hello. */
  authTimer: NodeJS.Timeout | undefined;

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
   * `compress` (when permessage-deflate is on) defaults to frames of at least
   * {@link COMPRESS_MIN_CHARS}.
   */
  sendRaw(data: string, type: string, compress = data.length >= COMPRESS_MIN_CHARS): void {
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
    this.ws.send(data, { compress });
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

/** What the hub remembers of a draft being streamed with `delta.append`. */
interface Draft {
  /** The text of the last `message.delta` broadcast. */
  text: string;
  /** Append connections that received that delta, so they hold `text`; others get offset 0 next. */
  synced: Set<Connection>;
}

/** The set of authenticated connections; broadcasts reach every one of them. */
export class Hub {
  readonly #clients = new Set<Connection>();
  /** Drafts by message_id, from their first delta to their `message.complete`. */
  readonly #drafts = new Map<string, Draft>();

  add(conn: Connection): void {
    this.#clients.add(conn);
  }

  remove(conn: Connection): void {
    this.#clients.delete(conn);
    for (const draft of this.#drafts.values()) draft.synced.delete(conn);
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
    // The draft is final now: nobody needs its offsets any more.
    if (msg.type === "message.complete") this.#drafts.delete(msg.message_id);
  }

  /**
   * Broadcast a cumulative `message.delta` (`msg.text` is the whole draft).
   * v1 connections get it as is. `delta.append` connections that received
   * the draft's previous delta get `offset` (the common prefix with it, see
   * {@link deltaOffset}) and the text from there; one that did not (it
   * authenticated mid-stream) gets offset 0 and the whole text. Each form is
   * serialised at most once per delta, whatever the number of connections.
   */
  broadcastDelta(msg: ServerMessageOf<"message.delta">): void {
    let draft = this.#drafts.get(msg.message_id);
    if (!draft) {
      draft = { text: "", synced: new Set() };
      this.#drafts.set(msg.message_id, draft);
    }
    const { conversation_id, message_id, text, ts } = msg;
    // Append deltas are short but frequent: their repeated envelope (IDs, field names, ts) is most
    // of their bytes, and deflate's context takeover shrinks it to a few bytes, so they are
    // compressed whatever their length. The cost is the deflate context (~256 KiB) that a v1
    // connection pays too once it streams an answer over COMPRESS_MIN_CHARS; idle ones still never do.
    // A connection's first delta of a message keeps the usual threshold: zlib works off the event
    // loop, so a compressed first frame waits for a busy loop (a burst) where a plain one goes at once.
    let cumulative: string | undefined;
    let append: string | undefined;
    let full: string | undefined;
    for (const conn of this.#clients) {
      if (!conn.appendDeltas) {
        cumulative ??= JSON.stringify(msg);
        conn.sendRaw(cumulative, msg.type);
      } else if (!draft.synced.has(conn)) {
        full ??= JSON.stringify(appendFrame(conversation_id, message_id, 0, text, ts));
        conn.sendRaw(full, msg.type);
        draft.synced.add(conn);
      } else {
        if (append === undefined) {
          const offset = deltaOffset(draft.text, text);
          append = JSON.stringify(appendFrame(conversation_id, message_id, offset, text.slice(offset), ts));
        }
        conn.sendRaw(append, msg.type, true);
      }
    }
    draft.text = text;
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

/** An append `message.delta`, fields in the schema's order. */
function appendFrame(
  conversation_id: string,
  message_id: string,
  offset: number,
  text: string,
  ts: string,
): ServerMessageOf<"message.delta"> {
  return { type: "message.delta", conversation_id, message_id, offset, text, ts };
}
