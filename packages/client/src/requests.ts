// Request correlation and the send queue: every request gets a `request_id`, waits for the reply
// that carries it (or its timeout), and, when `resume` makes it safe to send again, waits in the send
// queue across a drop. The connection (connection.ts) decides when frames can go out; this decides
// which request a frame answers.
import { isReplyType, type RequestType, type ServerMessage } from "@pheby/protocol";
import { PhebyError } from "./errors.js";
import { newClientMessageId } from "./resume.js";
import type { WebSocketLike } from "./socket.js";

/** A request's frame: its `type`, its `request_id`, and its fields. */
export type RequestFrame = { type: RequestType; request_id: string } & Record<string, unknown>;

/** A request: its frame, who waits for the reply, and what to do on a drop. */
interface Outgoing {
  frame: RequestFrame;
  timeoutMs: number | undefined;
  resolve(message: ServerMessage): void;
  reject(error: PhebyError): void;
  /** A send with a `client_message_id`, `resume` asked for: safe to send again after a drop. */
  retry: boolean;
  /** Sent at least once (a send queued while disconnected is not, and is safe for any server). */
  sent: boolean;
  /** The socket it was last sent on. */
  socket?: WebSocketLike;
}

interface Pending extends Outgoing {
  timer: ReturnType<typeof setTimeout>;
}

/** The requests a `client_message_id` makes safe to send again. */
const IDEMPOTENT: ReadonlySet<string> = new Set(["chat.send", "conversation.create"]);

/** Which reply a frame is: the request it answers, if one waits for it on that socket. */
export interface Match {
  requestId: string;
  pending: Pending;
}

/** The client's requests in flight and its send queue. */
export class Requests {
  private readonly pending = new Map<string, Pending>();
  /** Sends waiting for a connection, in order (`resume`). */
  private readonly queue: Outgoing[] = [];
  private nextId = 1;

  /**
   * @param timeoutMs How long a request waits for its reply by default.
   * @param stamp Whether `chat.send` and `conversation.create` get a `client_message_id` (`resume` asked for).
   */
  constructor(
    private readonly timeoutMs: number,
    private readonly stamp: boolean,
  ) {}

  /** A new `request_id`; `prefix` marks whose it is (the re-opens after a reconnect use `resync-`). */
  newId(prefix = "r"): string {
    return `${prefix}${this.nextId++}`;
  }

  /** A request's frame: its `request_id`, and with `resume` a `client_message_id` on sends that lack one. */
  frameOf(message: { type: RequestType } & Record<string, unknown>): RequestFrame {
    const frame: RequestFrame = {
      ...message,
      request_id: (message.request_id as string | undefined) ?? this.newId(),
    };
    if (this.stamp && IDEMPOTENT.has(frame.type) && frame.client_message_id === undefined) {
      frame.client_message_id = newClientMessageId();
    }
    return frame;
  }

  /**
   * Send `frame` on `socket` when given, else keep it in the send queue when it is safe to send
   * again and `canWait`; reject it otherwise. Resolves with the reply (an `error` rejects).
   */
  send(
    frame: RequestFrame,
    socket: WebSocketLike | undefined,
    options: { timeoutMs?: number; canWait?: boolean } = {},
  ): Promise<ServerMessage> {
    return new Promise((resolve, reject) => {
      const out: Outgoing = {
        frame,
        timeoutMs: options.timeoutMs,
        resolve,
        reject,
        retry: this.canWait(frame),
        sent: false,
      };
      if (socket) this.transmit(socket, out);
      else if (out.retry && options.canWait) this.queue.push(out);
      else reject(new PhebyError("connection_closed", "not connected"));
    });
  }

  /** Whether `frame` is safe to send again after a drop (so it may wait in the send queue). */
  canWait(frame: RequestFrame): boolean {
    return this.stamp && frame.client_message_id !== undefined && IDEMPOTENT.has(frame.type);
  }

  /** Send a request on `socket` and wait for its reply (until the request timeout). */
  private transmit(socket: WebSocketLike, out: Outgoing): void {
    const timeout = out.timeoutMs ?? this.timeoutMs;
    const requestId = out.frame.request_id;
    const timer = setTimeout(() => {
      this.pending.delete(requestId);
      out.reject(
        new PhebyError("timeout", `no reply to ${out.frame.type} within ${timeout} ms`, { requestId }),
      );
    }, timeout);
    out.sent = true;
    out.socket = socket;
    this.pending.set(requestId, { ...out, timer });
    socket.send(JSON.stringify(out.frame));
  }

  /** The request `message` (from `socket`) answers, if one waits for it: an `error`, or one of its reply types. */
  match(message: ServerMessage, socket: WebSocketLike): Match | undefined {
    const requestId = (message as { request_id?: string }).request_id;
    const pending = requestId === undefined ? undefined : this.pending.get(requestId);
    if (!pending || pending.socket !== socket) return undefined;
    if (message.type !== "error" && !isReplyType(pending.frame.type, message.type)) return undefined;
    return { requestId: requestId!, pending };
  }

  /** Settle a matched request with `message` (an `error` rejects with its code). */
  settle({ requestId, pending }: Match, message: ServerMessage): void {
    if (this.pending.get(requestId) !== pending) return;
    this.pending.delete(requestId);
    clearTimeout(pending.timer);
    if (message.type === "error") {
      pending.reject(new PhebyError(message.error.code, message.error.message, { requestId }));
    } else {
      pending.resolve(message);
    }
  }

  /**
   * `socket` ended: its requests reject with `connection_closed`, except, when `retain`, those safe to
   * send again, which go to the front of the send queue, in the order they were sent.
   */
  dropped(socket: WebSocketLike, retain: boolean): void {
    const retained: Outgoing[] = [];
    for (const [id, { timer, ...out }] of this.pending) {
      if (out.socket !== socket) continue;
      clearTimeout(timer);
      this.pending.delete(id);
      if (retain && out.retry) retained.push(out);
      else out.reject(new PhebyError("connection_closed", "connection closed", { requestId: id }));
    }
    this.queue.unshift(...retained);
  }

  /**
   * Send the send queue on `socket`, in order. A send that already went out once is sent again only to
   * a `resume` connection (`resume`), which answers a repeat with its first outcome; any other server
   * might do it twice.
   */
  flush(socket: WebSocketLike, resume: boolean): void {
    for (const out of this.queue.splice(0)) {
      if (out.sent && !resume) {
        out.reject(
          new PhebyError(
            "connection_closed",
            "the connection dropped before the reply, and this server cannot say whether it was handled",
            { requestId: out.frame.request_id },
          ),
        );
      } else {
        this.transmit(socket, out);
      }
    }
  }

  /** Reject everything in the send queue (the client closed, or failed for good). */
  failQueue(error: PhebyError): void {
    for (const out of this.queue.splice(0)) out.reject(error);
  }
}
