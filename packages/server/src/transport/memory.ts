/**
 * An in-process transport: connections to the server's sessions with no
 * socket and no port, for tests (and embedders that host a client in the
 * same process). Frames travel as strings, in order, each on a later turn of
 * the event loop, like network I/O; closes carry their code. Nothing of ws
 * applies here (compression, `maxPayload`, the send-buffer cap, the
 * heartbeat): those are the ws transport's.
 */
import { CLOSE_CODES, type RawFrame } from "@pheby/protocol";
import type { SendHint } from "../outbox/outbox.js";
import { nextLinkId, type PeerLink } from "../session/link.js";
import type { PeerSession, Sessions } from "../session/peer-session.js";

/** Runs callbacks in order, each batch on a later turn of the event loop. */
class Deliveries {
  #queue: (() => void)[] = [];

  push(fn: () => void): void {
    this.#queue.push(fn);
    if (this.#queue.length === 1) setImmediate(() => this.#drain());
  }

  #drain(): void {
    const batch = this.#queue;
    this.#queue = [];
    for (const fn of batch) fn();
  }
}

type Listeners = {
  open: (() => void)[];
  message: ((event: { data: string }) => void)[];
  close: ((event: { code: number; reason: string }) => void)[];
  error: ((event: unknown) => void)[];
};

/**
 * The client's end of an in-memory connection, with the subset of the WHATWG
 * WebSocket API that `@pheby/client` uses (`readyState`, `send`, `close`,
 * `addEventListener`), so it can stand in for a socket.
 */
export class MemorySocket {
  static readonly CONNECTING = 0;
  static readonly OPEN = 1;
  static readonly CLOSING = 2;
  static readonly CLOSED = 3;
  readyState = MemorySocket.CONNECTING;
  readonly #listeners: Listeners = { open: [], message: [], close: [], error: [] };
  readonly #toClient = new Deliveries();

  constructor(private readonly link: MemoryLink) {
    this.#toClient.push(() => {
      if (this.readyState !== MemorySocket.CONNECTING) return;
      this.readyState = MemorySocket.OPEN;
      for (const fn of this.#listeners.open) fn();
    });
  }

  addEventListener<K extends keyof Listeners>(type: K, listener: Listeners[K][number]): void {
    (this.#listeners[type] as Listeners[K][number][]).push(listener);
  }

  /** Send one frame to the server (a string, or bytes it decodes as UTF-8). */
  send(data: RawFrame): void {
    if (this.readyState === MemorySocket.CONNECTING) throw new Error("the connection is not open yet");
    if (this.readyState !== MemorySocket.OPEN) return;
    this.link.fromClient(data);
  }

  /** Close the connection; the server's session sees `code`. */
  close(code: number = CLOSE_CODES.normal, reason = ""): void {
    if (this.readyState >= MemorySocket.CLOSING) return;
    this.readyState = MemorySocket.CLOSING;
    this.link.closeFromClient(code, reason);
  }

  /** A frame from the server. */
  deliver(frame: string): void {
    this.#toClient.push(() => {
      if (this.readyState === MemorySocket.CLOSED) return;
      for (const fn of this.#listeners.message) fn({ data: frame });
    });
  }

  /** The connection ended with `code`, after every frame sent before it. */
  ended(code: number, reason: string): void {
    this.#toClient.push(() => {
      if (this.readyState === MemorySocket.CLOSED) return;
      this.readyState = MemorySocket.CLOSED;
      for (const fn of this.#listeners.close) fn({ code, reason });
    });
  }
}

/** The server's end of an in-memory connection. */
class MemoryLink implements PeerLink {
  readonly id = nextLinkId();
  readonly client: MemorySocket;
  #open = true;
  #session: PeerSession | undefined;
  readonly #toServer = new Deliveries();
  /** Settles once both ends know the connection is over. */
  readonly ended: Promise<void>;
  #end!: () => void;

  constructor(
    readonly address: string,
    private readonly onEnd: (link: MemoryLink) => void,
  ) {
    this.client = new MemorySocket(this);
    this.ended = new Promise((resolve) => {
      this.#end = resolve;
    });
  }

  attach(session: PeerSession): void {
    this.#session = session;
  }

  get open(): boolean {
    return this.#open;
  }

  send(frame: string, _hint: SendHint): void {
    if (this.#open) this.client.deliver(frame);
  }

  close(code: number, reason: string): void {
    if (!this.#open) return;
    this.#open = false;
    this.client.ended(code, reason);
    this.#toServer.push(() => this.#finish(code));
  }

  fromClient(data: RawFrame): void {
    this.#toServer.push(() => this.#session?.receive(data));
  }

  closeFromClient(code: number, reason: string): void {
    this.#toServer.push(() => {
      if (!this.#open) return;
      this.#open = false;
      this.client.ended(code, reason);
      this.#finish(code);
    });
  }

  #finish(code: number): void {
    this.#session?.closed(code);
    this.onEnd(this);
    this.#end();
  }
}

/** Connections to a server's {@link Sessions} inside this process. */
export class MemoryTransport {
  readonly #links = new Set<MemoryLink>();
  #closing = false;

  constructor(private readonly sessions: Sessions) {}

  /**
   * Open a connection and return the client's end. `address` is what the
   * lockout counts against (default "memory").
   */
  connect(options: { address?: string } = {}): MemorySocket {
    const link = new MemoryLink(options.address ?? "memory", (l) => this.#links.delete(l));
    if (this.#closing) {
      link.close(CLOSE_CODES.goingAway, "server shutdown");
      return link.client;
    }
    this.#links.add(link);
    link.attach(this.sessions.open(link));
    return link.client;
  }

  /** Close every connection with 1001 going-away, as the ws transport does on shutdown. */
  async close(): Promise<void> {
    this.#closing = true;
    const links = [...this.#links];
    for (const link of links) link.close(CLOSE_CODES.goingAway, "server shutdown");
    await Promise.all(links.map((l) => l.ended));
  }
}
