import { CLOSE_CODES } from "@pheby/protocol";
import type { Logger } from "pino";
import { WebSocket } from "ws";
import { nextLinkId, type PeerLink } from "../../connection/link.js";
import type { SendHint } from "../../outbox/outbox.js";

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

/**
 * One WebSocket peer: its liveness for the heartbeat, and a send path that
 * enforces the per-client send-buffer cap.
 */
export class WsLink implements PeerLink {
  readonly id = nextLinkId();
  /** Cleared on every heartbeat tick and set by the peer's pong. */
  alive = true;

  constructor(
    readonly ws: WebSocket,
    readonly address: string,
    private readonly opts: { log: Logger; maxBufferedBytes: number },
  ) {}

  get open(): boolean {
    return this.ws.readyState === WebSocket.OPEN;
  }

  /**
   * Send one frame. When what is still queued for this peer from earlier
   * sends exceeds the cap, the peer is not keeping up: it is closed with 4503
   * instead, so one slow reader cannot grow server memory without bound (at
   * most the cap plus one frame). Checking before the send means one large
   * frame never trips it by itself. Compression (when permessage-deflate is
   * on) defaults to frames of at least {@link COMPRESS_MIN_CHARS}.
   */
  send(frame: string, hint: SendHint): void {
    if (!this.open) return;
    if (this.ws.bufferedAmount > this.opts.maxBufferedBytes) {
      this.opts.log.warn(
        { conn: this.id, buffered: this.ws.bufferedAmount },
        "slow consumer: send buffer over cap, closing",
      );
      this.close(CLOSE_CODES.slowConsumer, "slow consumer");
      // The close frame queues behind the unread data; a peer that never reads is destroyed after a grace.
      setTimeout(() => this.ws.terminate(), SLOW_CLOSE_GRACE_MS).unref();
      return;
    }
    this.ws.send(frame, { compress: hint.compress ?? frame.length >= COMPRESS_MIN_CHARS });
  }

  close(code: number, reason = ""): void {
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) {
      this.ws.close(code, reason);
    }
  }
}
