// A raw connection to a Pheby server for tests: it sends anything (malformed input included), records
// every frame the server sends, validates each one against @pheby/protocol as it arrives, and lets a
// test wait for frames by predicate. Raw (not @pheby/client) on purpose: tests and the conformance
// suite must send what no client would and observe close codes.

import { isDeepStrictEqual } from "node:util";
import {
  checkFeatures,
  decodeServerFrame,
  PROTOCOL_VERSION,
  type ServerMessage,
  type ServerMessageOf,
  type ServerMessageType,
} from "@pheby/protocol";
import WebSocket from "ws";
import { runFrames } from "./run.js";

/** A frame the server sent that fails validation. */
export interface InvalidFrame {
  /** The label of the connection that received it. */
  connection: string;
  /** The frame as received (binary frames are described, not copied). */
  raw: string;
  /** Why it is invalid. */
  error: string;
}

/** How a connection closed. */
export interface CloseInfo {
  code: number;
  reason: string;
}

/** The server's `ready`. */
export type ReadyMessage = ServerMessageOf<"ready">;

/**
 * What a probe drives: a WHATWG-style WebSocket. `ws` sockets are opened by {@link Probe.open};
 * anything else with this shape (an in-memory connection, the runtime's WebSocket) comes through
 * {@link ProbeOptions.socket}.
 */
export interface ProbeSocket {
  readonly readyState: number;
  send(data: string | Buffer): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: "open", listener: () => void): void;
  addEventListener(type: "message", listener: (event: { data: unknown }) => void): void;
  addEventListener(type: "close", listener: (event: { code: number; reason: unknown }) => void): void;
  addEventListener(type: "error", listener: (event: unknown) => void): void;
}

/** How {@link Probe.open} connects and how the probe reports. */
export interface ProbeOptions {
  /** Names the connection in request ids and failure messages (default `p<n>`). */
  label?: string;
  /** Default wait for frames, replies, the open and the close, in ms (default 10 000). */
  timeoutMs?: number;
  /**
   * Strict validation (default true): a frame with fields its schema lacks is invalid, and frames
   * before `ready` are held to v1. The conformance suite turns it off: the spec lets a server add
   * fields, and it only holds frames after `ready` to the features `ready` enabled.
   */
  strict?: boolean;
  /** Called with every invalid frame (they are also kept in {@link Probe.invalid}). */
  onInvalid?: (frame: InvalidFrame) => void;
  /** Makes the error a failed wait, open or reply rejects with (default: a {@link ProbeError}). */
  fail?: (message: string, frame?: ServerMessage) => Error;
  /** A connection to drive instead of a `ws` socket to the URL (e.g. an in-memory one). */
  socket?: () => ProbeSocket;
  /** `ws` only: extra upgrade request headers. */
  headers?: Record<string, string>;
  /** `ws` only: the source address to bind (the auth lockout is keyed on it). */
  localAddress?: string;
  /** `ws` only: a CA certificate to trust (wss://). */
  ca?: string;
  /** `ws` only: the TLS server name. */
  servername?: string;
  /** `ws` only: offer permessage-deflate (default true). */
  perMessageDeflate?: boolean;
  /** `ws` only: answer pings automatically (default true). */
  autoPong?: boolean;
  /** `ws` only: the largest frame accepted, in bytes (default 256 MiB: a test reads what it is sent). */
  maxPayload?: number;
}

/** Options of {@link Probe.connect}: how to open, and the handshake. */
export interface ConnectOptions extends ProbeOptions {
  /** The secret `hello` carries. */
  secret: string;
  /** Features to ask for in `hello.features` (default: none, a v1 connection). */
  features?: readonly string[];
}

/** A failed wait, open or reply; `frame` is the offending (or last) frame, if any. */
export class ProbeError extends Error {
  override readonly name = "ProbeError";
  constructor(
    message: string,
    readonly frame?: ServerMessage,
  ) {
    super(message);
  }
}

type Predicate = (m: ServerMessage) => boolean;

type Waiter = {
  predicate: Predicate;
  failOn?: Predicate | undefined;
  what: string;
  resolve: (m: ServerMessage) => void;
  reject: (err: Error) => void;
};

let probes = 0;

/** A short description of a frame for failure messages. */
export function describe(m: ServerMessage): string {
  return m.type === "error" ? `error ${m.error.code}` : m.type;
}

/** One raw connection to the server under test. */
export class Probe {
  /** Every valid frame received, in order (unless {@link keepFrames} is off). */
  readonly frames: ServerMessage[] = [];
  /** Every text frame as received, byte for byte, before validation (unless {@link keepFrames} is off). */
  readonly raw: string[] = [];
  /** Frames that failed validation (also reported to `onInvalid`). */
  readonly invalid: InvalidFrame[] = [];
  /** Resolves when the connection closes. */
  readonly closed: Promise<CloseInfo>;
  /** The server's `ready`, once it arrived. */
  ready: ReadyMessage | undefined;
  /** What `ready` enabled on this connection (`ready.features`); nothing until then. */
  features: readonly string[] = [];
  /** Keep every frame in {@link frames} and {@link raw} (default); long runs turn it off and use {@link on}. */
  keepFrames = true;
  readonly label: string;
  readonly timeoutMs: number;
  readonly #strict: boolean;
  readonly #onInvalid: ((frame: InvalidFrame) => void) | undefined;
  readonly #fail: (message: string, frame?: ServerMessage) => Error;
  readonly #waiters = new Set<Waiter>();
  #listeners: ((m: ServerMessage) => void)[] = [];
  #closeInfo: CloseInfo | undefined;
  /** Until `ready`, the features frames are held to: v1 when strict, unchecked otherwise. */
  #enabled: ReadonlySet<string> | undefined;
  /** Frames before this index were consumed by {@link next}. */
  #seen = 0;
  #nextId = 1;

  private constructor(
    readonly socket: ProbeSocket,
    options: ProbeOptions,
  ) {
    this.label = options.label ?? `p${++probes}`;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.#strict = options.strict ?? true;
    this.#onInvalid = options.onInvalid;
    this.#fail = options.fail ?? ((message, frame) => new ProbeError(message, frame));
    this.#enabled = this.#strict ? new Set() : undefined;
    this.closed = new Promise((resolve) => {
      socket.addEventListener("close", (event) => {
        this.#closeInfo = { code: event.code, reason: String(event.reason ?? "") };
        for (const waiter of [...this.#waiters]) {
          this.#waiters.delete(waiter);
          waiter.reject(
            this.#fail(
              `${this.label}: the connection closed (${event.code}) before ${waiter.what}`,
              this.frames.at(-1),
            ),
          );
        }
        resolve(this.#closeInfo);
      });
    });
    socket.addEventListener("error", () => {
      /* a close event follows */
    });
    socket.addEventListener("message", (event) => this.#receive(event.data));
  }

  /**
   * Open a connection (no handshake yet): a `ws` socket to `url`, or `options.socket`. Rejects
   * when it closes before it opened (e.g. the upgrade is refused) or does not open in time.
   */
  static async open(url: string, options: ProbeOptions = {}): Promise<Probe> {
    const socket =
      options.socket?.() ??
      (new WebSocket(url, {
        ...(options.headers ? { headers: options.headers } : {}),
        ...(options.localAddress ? { localAddress: options.localAddress } : {}),
        ...(options.ca ? { ca: options.ca } : {}),
        ...(options.servername ? { servername: options.servername } : {}),
        perMessageDeflate: options.perMessageDeflate ?? true,
        autoPong: options.autoPong ?? true,
        maxPayload: options.maxPayload ?? 256 * 1024 * 1024,
      }) as unknown as ProbeSocket);
    const probe = new Probe(socket, options);
    const timeoutMs = probe.timeoutMs;
    let error = "";
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(probe.#fail(`could not connect to ${url} within ${timeoutMs} ms`));
        probe.close();
      }, timeoutMs);
      socket.addEventListener("open", () => {
        clearTimeout(timer);
        resolve();
      });
      socket.addEventListener("error", (event) => {
        error = String((event as { message?: unknown }).message ?? "");
      });
      socket.addEventListener("close", (event) => {
        clearTimeout(timer);
        reject(
          probe.#fail(
            `connection to ${url} closed (${event.code}) before it opened${error ? `: ${error}` : ""}`,
          ),
        );
      });
    });
    return probe;
  }

  /** Open a connection and complete the handshake (`hello` without a request_id); resolves after `ready`. */
  static async connect(url: string, options: ConnectOptions): Promise<Probe> {
    const probe = await Probe.open(url, options);
    await probe.hello(options.secret, options.features, { requestId: false });
    return probe;
  }

  /** The `ws` socket (for compression, pauses and raw bytes on the wire); throws for any other connection. */
  get ws(): WebSocket {
    if (!(this.socket instanceof WebSocket)) throw new Error(`${this.label} is not a ws connection`);
    return this.socket;
  }

  /** The close code and reason, once closed. */
  get closeState(): CloseInfo | undefined {
    return this.#closeInfo;
  }

  /** Subscribe to every valid frame; returns the unsubscribe function. */
  on(listener: (m: ServerMessage) => void): () => void {
    this.#listeners.push(listener);
    return () => {
      this.#listeners = this.#listeners.filter((l) => l !== listener);
    };
  }

  /** A fresh `request_id` unique to this connection. */
  requestId(): string {
    return `${this.label}-${this.#nextId++}`;
  }

  /** Send a frame: strings and Buffers go out verbatim, anything else as JSON. */
  send(frame: unknown): void {
    // Once closed, a frame is dropped (as a WebSocket does): any wait for its answer then fails.
    this.socket.send(typeof frame === "string" || Buffer.isBuffer(frame) ? frame : JSON.stringify(frame));
  }

  /**
   * Resolve with the first frame (at index ≥ `from`, default 0) matching `predicate`, waiting for
   * it if needed; fail after the timeout or once the connection closed, quoting `what`, or as soon
   * as a new frame matches `failOn` (e.g. the run finished first).
   */
  waitFor(
    predicate: Predicate,
    what: string,
    opts: { from?: number; timeoutMs?: number; failOn?: Predicate } = {},
  ): Promise<ServerMessage> {
    const found = this.frames.slice(opts.from ?? 0).find(predicate);
    if (found) return Promise.resolve(found);
    const timeoutMs = opts.timeoutMs ?? this.timeoutMs;
    if (this.#closeInfo)
      return Promise.reject(
        this.#fail(`${this.label}: the connection closed (${this.#closeInfo.code}) before ${what}`),
      );
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.delete(waiter);
        reject(this.#fail(`${this.label}: no ${what} within ${timeoutMs} ms`, this.frames.at(-1)));
      }, timeoutMs);
      const waiter: Waiter = {
        predicate,
        failOn: opts.failOn,
        what,
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m);
        },
        reject: (err) => {
          clearTimeout(timer);
          reject(err);
        },
      };
      this.#waiters.add(waiter);
    });
  }

  /** The next frame from now on (none already received) matching `predicate`. */
  upcoming(predicate: Predicate, timeoutMs?: number): Promise<ServerMessage> {
    return this.waitFor(predicate, "the awaited frame", {
      from: this.frames.length,
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
    });
  }

  /** The first frame so far, or to come, matching `predicate`. */
  nextAny(predicate: Predicate, timeoutMs?: number): Promise<ServerMessage> {
    return this.waitFor(predicate, "the awaited frame", timeoutMs === undefined ? {} : { timeoutMs });
  }

  /**
   * The next frame of `type` matching `pred` after those consumed by earlier `next` calls: a test
   * reads a connection in order. Everything received up to the match counts as consumed.
   */
  async next<T extends ServerMessageType>(
    type: T,
    pred: (m: ServerMessageOf<T>) => boolean = () => true,
    timeoutMs?: number,
  ): Promise<ServerMessageOf<T>> {
    const match: Predicate = (m) => m.type === type && pred(m as ServerMessageOf<T>);
    const from = this.#seen;
    const index = this.frames.findIndex((m, i) => i >= from && match(m));
    if (index >= 0) {
      this.#seen = index + 1;
      return this.frames[index] as ServerMessageOf<T>;
    }
    // The match consumes what came up to it, decided as it arrives: frames that follow it in the
    // same read are still unread when the awaiting test resumes.
    const consume: Predicate = (m) => {
      if (!match(m)) return false;
      this.#seen = this.frames.length;
      return true;
    };
    const m = await this.waitFor(consume, type, {
      from: this.frames.length,
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
    });
    return m as ServerMessageOf<T>;
  }

  /** The first frame echoing `requestId` (the reply or an error). */
  reply(requestId: string, what: string, timeoutMs?: number): Promise<ServerMessage> {
    return this.waitFor(
      (m) => (m as { request_id?: string }).request_id === requestId,
      `reply to ${what} (request_id ${requestId})`,
      timeoutMs === undefined ? {} : { timeoutMs },
    );
  }

  /**
   * Send a request with a fresh `request_id`; resolves with the frame echoing it: of `type` or an
   * `error` when `type` is given (other frames echoing it are passed over), else the first one.
   */
  async request<T extends ServerMessageType = ServerMessageType>(
    frame: Record<string, unknown>,
    type?: T,
    timeoutMs?: number,
  ): Promise<ServerMessageOf<T> | ServerMessageOf<"error">> {
    const request_id = this.requestId();
    this.send({ ...frame, request_id });
    const what = `${type ?? "the reply"} to ${String(frame.type)} (request_id ${request_id})`;
    const reply = await this.waitFor(
      (m) =>
        (m as { request_id?: string }).request_id === request_id &&
        (type === undefined || m.type === type || m.type === "error"),
      what,
      { from: this.frames.length, ...(timeoutMs === undefined ? {} : { timeoutMs }) },
    );
    return reply as ServerMessageOf<T> | ServerMessageOf<"error">;
  }

  /** Like {@link request}, but rejects unless the answer is of `type`. */
  async ok<T extends ServerMessageType>(
    frame: Record<string, unknown>,
    type: T,
    timeoutMs?: number,
  ): Promise<ServerMessageOf<T>> {
    const reply = await this.request(frame, type, timeoutMs);
    if (reply.type !== type)
      throw this.#fail(`${String(frame.type)}: expected ${type}, got ${JSON.stringify(reply)}`, reply);
    return reply as ServerMessageOf<T>;
  }

  /**
   * Send a request with a fresh `request_id`; the first frame echoing it must be of `replyType`
   * (stricter than {@link ok}: nothing else may echo the request first).
   */
  async expectReply<T extends ServerMessageType>(
    frame: { type: string } & Record<string, unknown>,
    replyType: T,
  ): Promise<ServerMessageOf<T>> {
    const request_id = this.requestId();
    this.send({ ...frame, request_id });
    const reply = await this.reply(request_id, frame.type);
    if (reply.type !== replyType)
      throw this.#fail(`${frame.type} was answered with ${describe(reply)}, not ${replyType}`, reply);
    return reply as ServerMessageOf<T>;
  }

  /**
   * Send a request and expect an `error` with `code` echoing its `request_id`. A raw string frame
   * may not carry our request_id; then the next error counts.
   */
  async expectError(frame: Record<string, unknown> | string, code: string, what: string): Promise<void> {
    const request_id = this.requestId();
    const from = this.frames.length;
    this.send(typeof frame === "string" ? frame : { ...frame, request_id });
    const reply =
      typeof frame === "string"
        ? await this.waitFor((m) => m.type === "error", `error for ${what}`, { from })
        : await this.reply(request_id, what);
    if (reply.type !== "error" || reply.error.code !== code)
      throw this.#fail(`${what}: expected error ${code}, got ${describe(reply)}`, reply);
  }

  /**
   * Complete the handshake (asking for `features` when given); resolves with `ready`, rejects with
   * the frame that refused it. `requestId: false` sends a `hello` without one.
   */
  async hello(
    secret: string,
    features?: readonly string[],
    opts: { requestId?: boolean } = {},
  ): Promise<ReadyMessage> {
    const hello = {
      type: "hello",
      secret,
      protocol_version: PROTOCOL_VERSION,
      ...(features ? { features } : {}),
    };
    if (opts.requestId ?? true) return this.expectReply(hello, "ready");
    const from = this.frames.length;
    this.send(hello);
    const reply = await this.waitFor((m) => m.type === "ready" || m.type === "error", "ready", { from });
    if (reply.type !== "ready")
      throw this.#fail(`hello was answered with ${describe(reply)}, not ready`, reply);
    return reply;
  }

  /** Wait for the server to close the connection. */
  async waitClosed(what: string, timeoutMs = this.timeoutMs): Promise<CloseInfo> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(this.#fail(`${this.label}: the server did not close the connection ${what}`)),
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
    await this.expectReply({ type: "ping" }, "pong");
  }

  /**
   * Follow a run by what the protocol says about it: the `message_id` its `message.start` names
   * (the engine's own ids are its business).
   */
  async runMessageId(runId: string, timeoutMs?: number): Promise<string> {
    const start = await this.waitFor(
      (m) => m.type === "message.start" && m.run_id === runId,
      `message.start of run ${runId}`,
      timeoutMs === undefined ? {} : { timeoutMs },
    );
    return (start as ServerMessageOf<"message.start">).message_id;
  }

  /**
   * Follow a run to its end: once its `run.finished` arrived, every frame of the run but its
   * `run.accepted` (see {@link runFrames}), in order.
   */
  async run(runId: string, timeoutMs?: number): Promise<ServerMessage[]> {
    await this.waitFor(
      (m) => m.type === "run.finished" && m.run_id === runId,
      `run.finished of run ${runId}`,
      timeoutMs === undefined ? {} : { timeoutMs },
    );
    return runFrames(this.frames, runId, { accepted: false });
  }

  /** Close from our side. */
  close(code = 1000): void {
    if (this.socket.readyState === WebSocket.OPEN || this.socket.readyState === WebSocket.CONNECTING)
      this.socket.close(code);
  }

  #receive(data: unknown): void {
    if (typeof data !== "string") {
      const size = (data as { byteLength?: number }).byteLength ?? 0;
      this.#invalid(`<binary frame of ${size} bytes>`, "binary frame");
      return;
    }
    if (this.keepFrames) this.raw.push(data);
    const decoded = decodeServerFrame(data);
    if (!decoded.ok) {
      this.#invalid(data, `${decoded.error.code}: ${decoded.error.message}`);
      return;
    }
    const message = decoded.message;
    const value = JSON.parse(data) as { type: string };
    // Nothing may be stripped when strict: the server must not send fields its schema lacks.
    if (this.#strict && !isDeepStrictEqual(message, value)) {
      this.#invalid(data, "frame has fields the schema does not define");
      return;
    }
    // A ready's own extension fields belong to the features it enables; every later frame is held to
    // them too (a v1 connection must get v1, byte for byte).
    if (message.type === "ready") {
      this.ready = message;
      this.features = message.features ?? [];
      this.#enabled = new Set(this.features);
    }
    const misfit = this.#enabled && checkFeatures(value, this.#enabled);
    if (misfit) {
      this.#invalid(data, `${misfit.code}: ${misfit.message}`);
      return;
    }
    if (this.keepFrames) this.frames.push(message);
    for (const listener of this.#listeners) listener(message);
    for (const waiter of [...this.#waiters]) {
      if (waiter.predicate(message)) {
        this.#waiters.delete(waiter);
        waiter.resolve(message);
      } else if (waiter.failOn?.(message)) {
        this.#waiters.delete(waiter);
        waiter.reject(this.#fail(`${this.label}: ${message.type} arrived first`, message));
      }
    }
  }

  #invalid(raw: string, error: string): void {
    const frame = { connection: this.label, raw, error };
    this.invalid.push(frame);
    this.#onInvalid?.(frame);
  }
}
