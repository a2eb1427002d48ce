// The connection: one WebSocket at a time, its handshake, its ping, and the reconnect with backoff
// after a drop (the Kotlin client's Link and reconnect loop). What the frames mean is decided above
// it (client.ts); the requests it sends itself (hello, ping) go through the request correlation.
import { CLOSE_CODES, FEATURE_RESUME, type ServerMessage, type ServerMessageOf } from "@pheby/protocol";
import { type BackoffOptions, backoffDelay, DEFAULT_MAX_DELAY_MS } from "./backoff.js";
import { Emitter } from "./emitter.js";
import { PhebyError } from "./errors.js";
import type { ClientExtension, ExtensionLink } from "./extensions.js";
import type { RequestFrame, Requests } from "./requests.js";
import { defaultWebSocket, type WebSocketConstructor, type WebSocketLike } from "./socket.js";
import { frameText, lockoutError, type TransportFailure, transportFailure } from "./transport.js";

/**
 * Where the connection stands (the same names as the Kotlin client's `ConnectionState`). `failed` is
 * final (the server refused the secret or the protocol version) until {@link PhebyClient.connect} is
 * called again; `closed` follows {@link PhebyClient.close}, a failed first connect, or a drop with
 * reconnect off.
 */
export type ConnectionState = "idle" | "connecting" | "open" | "reconnecting" | "failed" | "closed";

/**
 * Close codes after which reconnecting cannot help (docs/protocol.md, close codes): a wrong secret
 * and a protocol version the server does not speak. A lockout (4429) only means "wait"; every other
 * close is reconnected with backoff.
 */
const FINAL_CLOSE_CODES: ReadonlySet<number> = new Set([
  CLOSE_CODES.unauthorized,
  CLOSE_CODES.versionMismatch,
]);
const FINAL_ERROR_CODES: ReadonlySet<string> = new Set(["unauthorized", "version_mismatch"]);

/** One WebSocket and what its `ready` enabled. */
export class Link implements ExtensionLink {
  /** The hello's `request_id`: the `ready` that answers it enables this link's extensions. */
  helloId = "";
  /** Its `ready` arrived. */
  ready = false;
  /** The extensions the server enabled (`ready.features`). */
  features: readonly string[] = [];
  /** The client's extensions whose feature the server enabled, in the order they see frames. */
  extensions: readonly ClientExtension[] = [];

  constructor(
    readonly socket: WebSocketLike,
    /** It replaces a dropped connection (so `resume` catches up the followed conversations). */
    readonly reconnected: boolean,
  ) {}

  /** The server enabled `resume`: a send it carried may be repeated on the next connection. */
  get resume(): boolean {
    return this.features.includes(FEATURE_RESUME);
  }

  send(frame: { type: string } & Record<string, unknown>): boolean {
    // 1 is WebSocket.OPEN in every implementation.
    if (this.socket.readyState !== 1) return false;
    this.socket.send(JSON.stringify(frame));
    return true;
  }
}

/** Options the connection uses (a subset of {@link PhebyClientOptions}). */
export interface ConnectionOptions {
  url: string;
  WebSocket?: WebSocketConstructor;
  reconnect?: false | BackoffOptions;
  pingIntervalMs?: number;
}

/** What the connection hands up: each frame, the `ready` of a link, and a link's end. */
export interface ConnectionHandler {
  /** The `hello` to send (its `request_id` is set by the connection). */
  hello(): { type: "hello" } & Record<string, unknown>;
  /** A frame of the current link, as received. */
  frame(link: Link, raw: string): void;
  /** The link is open (its `ready` was handled); `reconnected` when it replaces a dropped one. */
  opened(link: Link): void;
  /** The link ended; `retain`: sends safe to repeat wait for the next link. */
  dropped(link: Link, retain: boolean): void;
}

/** The socket, the handshake, the ping and the reconnect loop. */
export class Connection {
  private readonly states = new Emitter<{ state: ConnectionState }>();
  private link: Link | undefined;
  private stateValue: ConnectionState = "idle";
  private attempt = 0;
  private userClosed = false;
  private everConnected = false;
  /** The wait the server asked for at its last lockout (`rate_limited`, 4429), until the next attempt. */
  private lockedOutFor: number | undefined;
  /** Why the connection failed for good (`failed`), until the next {@link connect}. */
  private lastFailure: PhebyError | undefined;
  private reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  private pingTimer: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly options: ConnectionOptions,
    private readonly requests: Requests,
    private readonly handler: ConnectionHandler,
  ) {}

  get state(): ConnectionState {
    return this.stateValue;
  }

  onState(handler: (state: ConnectionState) => void): () => void {
    return this.states.on("state", handler);
  }

  /** The link requests can use now: open, its `ready` handled. */
  get current(): Link | undefined {
    return this.stateValue === "open" ? this.link : undefined;
  }

  /** Whether a drop is repaired by a reconnect (so a send can wait for it). */
  get willReconnect(): boolean {
    return (
      !this.userClosed &&
      this.everConnected &&
      this.options.reconnect !== false &&
      this.stateValue !== "failed" &&
      this.stateValue !== "closed"
    );
  }

  /** What a request or a run that can no longer be answered fails with: why it failed, or `connection_closed`. */
  failure(): PhebyError {
    if (this.stateValue === "failed" && this.lastFailure) return this.lastFailure;
    return new PhebyError(
      "connection_closed",
      this.userClosed ? "the client was closed" : "the connection closed and is not reconnecting",
    );
  }

  connect(): Promise<ServerMessageOf<"ready">> {
    this.userClosed = false;
    this.lastFailure = undefined;
    clearTimeout(this.reconnectTimer);
    return this.open("connecting");
  }

  close(): void {
    this.userClosed = true;
    clearTimeout(this.reconnectTimer);
    const link = this.link;
    this.link = undefined;
    clearInterval(this.pingTimer);
    if (link) {
      link.socket.close(CLOSE_CODES.normal, "client closed");
      this.handler.dropped(link, false);
    }
    this.setState("closed");
  }

  private setState(state: ConnectionState): void {
    if (this.stateValue === state) return;
    this.stateValue = state;
    this.states.emit("state", state);
  }

  private async open(state: "connecting" | "reconnecting"): Promise<ServerMessageOf<"ready">> {
    this.setState(state);
    const Ctor = this.options.WebSocket ?? (await defaultWebSocket());
    const link = new Link(new Ctor(this.options.url), this.everConnected);
    const { socket } = link;
    this.link = link;
    let failure: PhebyError | undefined;
    let opening = true;
    let transport: TransportFailure | undefined;
    let closed: { code: number; reason: string } | undefined;

    const opened = new Promise<void>((resolve, reject) => {
      socket.addEventListener("open", () => {
        opening = false;
        resolve();
      });
      socket.addEventListener("close", (event) => {
        closed = { code: event.code, reason: event.reason };
        this.lockedOutFor = lockoutError(closed)?.retryAfterMs ?? this.lockedOutFor;
        reject(
          failure ??
            (transport
              ? new PhebyError("connection_closed", transport.message, {
                  status: transport.status,
                  cause: transport.cause,
                })
              : new PhebyError(
                  "connection_closed",
                  opening
                    ? `closed (${event.code}) before the WebSocket to ${this.options.url} opened (the runtime does not say why)`
                    : `closed (${event.code}) before ready`,
                )),
        );
        this.onClose(link, event.code);
      });
      // A close event follows; keep what the runtime says went wrong (Node does, browsers do not).
      socket.addEventListener("error", (event) => {
        if (opening) transport ??= transportFailure(event, this.options.url);
      });
    });
    socket.addEventListener("message", (event) => {
      if (this.link === link) this.handler.frame(link, frameText(event.data));
    });

    await opened;
    try {
      const hello = this.requests.frameOf(this.handler.hello());
      link.helloId = hello.request_id;
      const ready = (await this.requests.send(hello, socket)) as ServerMessageOf<"ready">;
      this.attempt = 0;
      this.everConnected = true;
      this.setState("open");
      this.startPing(link);
      this.handler.opened(link);
      return ready;
    } catch (err) {
      failure = err instanceof PhebyError ? err : new PhebyError("connection_closed", String(err));
      // A server refusing a locked-out address as the socket opens closes it 4429 before our hello is
      // answered: that close is the answer.
      if (failure.code === "connection_closed" && closed) failure = lockoutError(closed) ?? failure;
      // Before the close, this is what the next reconnect waits (the close reason may repeat it).
      if (failure.code === "rate_limited" && !closed) this.lockedOutFor = failure.retryAfterMs;
      if (FINAL_ERROR_CODES.has(failure.code)) {
        this.lastFailure = failure;
        this.setState("failed");
      }
      socket.close();
      throw failure;
    }
  }

  private onClose(link: Link, code: number): void {
    if (link !== this.link) return;
    this.link = undefined;
    clearInterval(this.pingTimer);
    this.pingTimer = undefined;
    const final = FINAL_CLOSE_CODES.has(code) || this.stateValue === "failed";
    if (final) {
      this.lastFailure ??= new PhebyError(
        code === CLOSE_CODES.versionMismatch ? "version_mismatch" : "unauthorized",
        `the server closed the connection (${code}) and will not accept it again`,
      );
      this.setState("failed");
    }
    // A send the server may have handled is kept for the next connection when it can ask again safely.
    this.handler.dropped(link, !final && link.resume && this.willReconnect);
    if (this.userClosed || final || this.options.reconnect === false || !this.everConnected) {
      if (!final && !this.userClosed) this.setState("closed");
      return;
    }
    this.scheduleReconnect(code);
  }

  /** Reconnect after the backoff, or after the lockout's wait when the close (`closeCode`) was one. */
  private scheduleReconnect(closeCode: number): void {
    this.setState("reconnecting");
    const backoff = this.options.reconnect || {};
    let delay = backoffDelay(this.attempt++, backoff);
    if (this.lockedOutFor !== undefined || closeCode === CLOSE_CODES.lockedOut) {
      // Locked out: wait what the server said (or lockedOutDelayMs when it said nothing). Trying
      // earlier only gets another 4429.
      delay = Math.max(
        delay,
        this.lockedOutFor ?? backoff.lockedOutDelayMs ?? backoff.maxDelayMs ?? DEFAULT_MAX_DELAY_MS,
      );
      this.lockedOutFor = undefined;
    }
    this.reconnectTimer = setTimeout(() => {
      // A failed attempt ends in a close event, and onClose schedules the next one.
      this.open("reconnecting").catch(() => undefined);
    }, delay);
  }

  private startPing(link: Link): void {
    const interval = this.options.pingIntervalMs ?? 25_000;
    if (interval <= 0) return;
    this.pingTimer = setInterval(() => {
      const ping: RequestFrame = this.requests.frameOf({ type: "ping" });
      this.requests
        .send(ping, link.socket, { timeoutMs: Math.min(interval, 10_000) })
        .catch((err: PhebyError) => {
          // A missed pong means a dead path (e.g. a phone changing networks): force a reconnect.
          if (err.code === "timeout" && link === this.link)
            link.socket.close(CLOSE_CODES.normal, "ping timeout");
        });
    }, interval);
  }
}

/** The `ready` a frame is, when it answers `link`'s hello. */
export function isReadyOf(link: Link, message: ServerMessage): message is ServerMessageOf<"ready"> {
  return message.type === "ready" && message.request_id === link.helloId;
}
