// A raw WebSocket connection under test. It records every frame the server
// sends, validates each one against @pheby/protocol as it arrives (and, once
// authenticated, against the extensions the connection enabled), and lets a
// check wait for frames by predicate. Raw (not @pheby/client) on purpose: the
// suite must send malformed input and observe close codes.
import { checkFeatures, decodeServerFrame, PROTOCOL_VERSION, type ServerMessage } from "@pheby/protocol";
import WebSocket from "ws";
import { CheckFailure } from "./failure.js";

/** A frame the server sent that `@pheby/protocol` rejects. */
export interface InvalidFrame {
  /** Which connection received it. */
  connection: string;
  raw: string;
  error: string;
}

/** How the server closed a connection. */
export interface CloseInfo {
  code: number;
  reason: string;
}

type Waiter = {
  predicate: (m: ServerMessage) => boolean;
  failOn?: ((m: ServerMessage) => boolean) | undefined;
  resolve: (m: ServerMessage) => void;
  reject: (err: CheckFailure) => void;
};

/** One WebSocket connection to the server under test. */
export class Probe {
  /** Every valid frame received, in order. */
  readonly frames: ServerMessage[] = [];
  /** Frames that failed validation (also reported to `onInvalid`). */
  readonly invalid: InvalidFrame[] = [];
  /** Resolves when the socket closes. */
  readonly closed: Promise<CloseInfo>;
  private readonly waiters = new Set<Waiter>();
  private closeInfo: CloseInfo | undefined;
  private nextId = 1;
  /** The server's `ready`, once the handshake is done. */
  ready: Extract<ServerMessage, { type: "ready" }> | undefined;
  /** The features `ready` enabled (none for a v1 hello); undefined before the handshake. */
  private enabled: ReadonlySet<string> | undefined;

  private constructor(
    readonly label: string,
    private readonly socket: WebSocket,
    private readonly timeoutMs: number,
    private readonly onInvalid: (frame: InvalidFrame) => void,
  ) {
    this.closed = new Promise((resolve) => {
      socket.on("close", (code, reason) => {
        this.closeInfo = { code, reason: reason.toString() };
        resolve(this.closeInfo);
      });
    });
    socket.on("error", () => {
      /* a close event follows */
    });
    socket.on("message", (data, isBinary) => {
      const raw = isBinary ? `<binary frame of ${(data as Buffer).length} bytes>` : data.toString();
      // Once authenticated, strictly: a frame or field of a feature this connection did not enable
      // is invalid (a v1 connection must get v1, byte for byte).
      const decoded = isBinary
        ? undefined
        : decodeServerFrame(raw, this.enabled === undefined ? {} : { features: this.enabled });
      if (!decoded?.ok) {
        const frame = {
          connection: label,
          raw,
          error: decoded ? `${decoded.error.code}: ${decoded.error.message}` : "binary frame",
        };
        this.reject(frame);
        return;
      }
      this.frames.push(decoded.message);
      for (const waiter of [...this.waiters]) {
        if (waiter.predicate(decoded.message)) {
          this.waiters.delete(waiter);
          waiter.resolve(decoded.message);
        } else if (waiter.failOn?.(decoded.message)) {
          this.waiters.delete(waiter);
          waiter.reject(new CheckFailure(`${label}: ${decoded.message.type} arrived first`, decoded.message));
        }
      }
    });
  }

  /** Open a connection (no handshake yet). Rejects with a {@link CheckFailure} when it cannot connect. */
  static async open(
    url: string,
    label: string,
    timeoutMs: number,
    onInvalid: (frame: InvalidFrame) => void,
  ): Promise<Probe> {
    const socket = new WebSocket(url, { maxPayload: 256 * 1024 * 1024 });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new CheckFailure(`could not connect to ${url}`)), timeoutMs);
      socket.once("open", () => {
        clearTimeout(timer);
        resolve();
      });
      socket.once("close", (code) => {
        clearTimeout(timer);
        reject(new CheckFailure(`connection to ${url} closed (${code}) before it opened`));
      });
    });
    return new Probe(label, socket, timeoutMs, onInvalid);
  }

  /** The close code and reason, once closed. */
  get closeState(): CloseInfo | undefined {
    return this.closeInfo;
  }

  /** A fresh `request_id` unique to this connection. */
  requestId(): string {
    return `${this.label}-${this.nextId++}`;
  }

  /** Send a frame: strings and Buffers go out verbatim, anything else as JSON. */
  send(frame: unknown): void {
    if (this.socket.readyState !== WebSocket.OPEN)
      throw new CheckFailure(`${this.label}: cannot send, the connection is closed`);
    this.socket.send(typeof frame === "string" || Buffer.isBuffer(frame) ? frame : JSON.stringify(frame));
  }

  /**
   * Resolve with the first frame (at index ≥ `from`, default 0) matching
   * `predicate`, waiting for it if needed; fail after the timeout, quoting `what`,
   * or as soon as a new frame matches `failOn` (e.g. the run finished first).
   */
  waitFor(
    predicate: (m: ServerMessage) => boolean,
    what: string,
    opts: { from?: number; timeoutMs?: number; failOn?: (m: ServerMessage) => boolean } = {},
  ): Promise<ServerMessage> {
    const from = opts.from ?? 0;
    const found = this.frames.slice(from).find(predicate);
    if (found) return Promise.resolve(found);
    const timeoutMs = opts.timeoutMs ?? this.timeoutMs;
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        predicate,
        failOn: opts.failOn,
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m);
        },
        reject: (err) => {
          clearTimeout(timer);
          reject(err);
        },
      };
      const timer = setTimeout(() => {
        this.waiters.delete(waiter);
        const closed = this.closeInfo ? ` (connection closed with ${this.closeInfo.code})` : "";
        reject(
          new CheckFailure(`${this.label}: no ${what} within ${timeoutMs} ms${closed}`, this.frames.at(-1)),
        );
      }, timeoutMs);
      this.waiters.add(waiter);
    });
  }

  /** Wait for the frame of `type` echoing `requestId`, or an error echoing it. */
  reply(requestId: string, what: string, timeoutMs?: number): Promise<ServerMessage> {
    return this.waitFor(
      (m) => (m as { request_id?: string }).request_id === requestId,
      `reply to ${what} (request_id ${requestId})`,
      timeoutMs === undefined ? {} : { timeoutMs },
    );
  }

  /**
   * Send a request with a fresh `request_id` and resolve with the frame that
   * echoes it: the expected `replyType`, else a {@link CheckFailure} quoting it.
   */
  async request<T extends ServerMessage["type"]>(
    frame: { type: string } & Record<string, unknown>,
    replyType: T,
  ): Promise<Extract<ServerMessage, { type: T }>> {
    const request_id = this.requestId();
    this.send({ ...frame, request_id });
    const reply = await this.reply(request_id, frame.type);
    if (reply.type !== replyType)
      throw new CheckFailure(`${frame.type} was answered with ${describe(reply)}, not ${replyType}`, reply);
    return reply as Extract<ServerMessage, { type: T }>;
  }

  /** Send a request and expect an `error` with `code`, echoing its `request_id`. */
  async expectError(frame: Record<string, unknown> | string, code: string, what: string): Promise<void> {
    const request_id = this.requestId();
    this.send(typeof frame === "string" ? frame : { ...frame, request_id });
    // A raw string frame may not carry our request_id; then any error counts.
    const reply =
      typeof frame === "string"
        ? await this.waitFor((m) => m.type === "error", `error for ${what}`, { from: this.frames.length })
        : await this.reply(request_id, what);
    if (reply.type !== "error" || reply.error.code !== code)
      throw new CheckFailure(`${what}: expected error ${code}, got ${describe(reply)}`, reply);
  }

  /** Complete the handshake (asking for `features` when given); resolves with `ready`. */
  async hello(secret: string, features?: string[]): Promise<Extract<ServerMessage, { type: "ready" }>> {
    const ready = await this.request(
      { type: "hello", secret, protocol_version: PROTOCOL_VERSION, ...(features ? { features } : {}) },
      "ready",
    );
    this.ready = ready;
    this.enabled = new Set(ready.features ?? []);
    // `ready` itself arrived before the features were known: hold it to the ones it lists (a v1
    // connection's ready carries no push or device).
    const misfit = checkFeatures(ready, this.enabled);
    if (misfit)
      this.reject({
        connection: this.label,
        raw: JSON.stringify(ready),
        error: `${misfit.code}: ${misfit.message}`,
      });
    return ready;
  }

  /** Record a frame that fails validation. */
  private reject(frame: InvalidFrame): void {
    this.invalid.push(frame);
    this.onInvalid(frame);
  }

  /** Wait for the server to close the connection. */
  async waitClosed(what: string, timeoutMs = this.timeoutMs): Promise<CloseInfo> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new CheckFailure(`${this.label}: the server did not close the connection ${what}`)),
        timeoutMs,
      );
    });
    try {
      return await Promise.race([this.closed, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** A round trip: proves the connection is still open and everything sent before was processed. */
  async ping(): Promise<void> {
    await this.request({ type: "ping" }, "pong");
  }

  /** Close from our side. */
  close(): void {
    if (this.socket.readyState === WebSocket.OPEN || this.socket.readyState === WebSocket.CONNECTING)
      this.socket.close(1000);
  }
}

/** A short description of a frame for failure messages. */
export function describe(m: ServerMessage): string {
  return m.type === "error" ? `error ${m.error.code}` : m.type;
}
