/**
 * The in-memory linked server exported for integrators' tests: {@link createServerCore} served by
 * the in-memory transport, and a WebSocket constructor for `@pheby/client` that opens its links.
 */
import type { SweepResult } from "./attachments/store.js";
import { createServerCore, type PhebyServerOptions } from "./server.js";
import { MemoryTransport } from "./transport/memory.js";

/**
 * The client's end of an in-memory connection: the subset of the WHATWG WebSocket that
 * `@pheby/client` uses. Declared here, not taken from the transport's class, so the package's public
 * types stay free of the server's internals (and of better-sqlite3's types).
 */
export interface InMemorySocket {
  /** 0 connecting, 1 open, 2 closing, 3 closed, as a WebSocket's. */
  readonly readyState: number;
  addEventListener(type: "open", listener: () => void): void;
  addEventListener(type: "message", listener: (event: { data: string }) => void): void;
  addEventListener(type: "close", listener: (event: { code: number; reason: string }) => void): void;
  addEventListener(type: "error", listener: (event: unknown) => void): void;
  /** Send one frame to the server (a string, or bytes it decodes as UTF-8). */
  send(data: string | ArrayBuffer | Uint8Array): void;
  /** Close the connection; the server sees `code`. */
  close(code?: number, reason?: string): void;
}

/** A WebSocket constructor whose every connection is an in-memory one (its `url` argument is ignored). */
export type MemoryWebSocketConstructor = new (url: string) => InMemorySocket;

/** A server reachable only from this process: see {@link createInMemoryServer}. */
export interface InMemoryServer {
  /**
   * Pass as `@pheby/client`'s `WebSocket` option: each `new` opens a connection to this server
   * in memory (the URL it is given is ignored).
   */
  readonly WebSocket: MemoryWebSocketConstructor;
  /** A URL to give the client (`memory://pheby/ws`); nothing listens on it. */
  readonly url: string;
  /** Open a connection and return the client's end; `address` is what the failed-hello lockout counts against (default "memory"). */
  connect(options?: { address?: string }): InMemorySocket;
  /** Shut down as `PhebyServer.close()` does: connections close with 1001, active runs fail, the database closes. */
  close(): Promise<void>;
  /** Run the attachment sweep now, as `PhebyServer.sweepAttachments()` does (it also runs at start and hourly). */
  sweepAttachments(): Promise<SweepResult>;
}

/**
 * A Pheby server without a port, linked to clients in the same process, for integrators' tests (as
 * the MCP SDK's `InMemoryTransport.createLinkedPair()`): the same connections, store and agent as
 * {@link createPhebyServer}, and the client's WebSocket replaced by an in-memory link that keeps
 * frames in order and delivers each on a later turn of the event loop, like a socket.
 *
 * ```ts
 * const server = await createInMemoryServer({ secret, dataDir, agent: createSimulatorBackend() });
 * const client = new PhebyClient({ url: server.url, secret, WebSocket: server.WebSocket });
 * await client.connect();
 * // …
 * client.close();
 * await server.close();
 * ```
 *
 * Only the WebSocket protocol is linked: the HTTP routes (attachments, approval answers, pairing
 * claims) need {@link createPhebyServer} and a port, and nothing of ws applies (compression, the
 * send-buffer cap, the heartbeat).
 */
export async function createInMemoryServer(options: PhebyServerOptions): Promise<InMemoryServer> {
  const core = createServerCore(options);
  const transport = new MemoryTransport(core.connections);
  core.attach(transport);
  await core.start();
  const connect = (connectOptions?: { address?: string }): InMemorySocket =>
    transport.connect(connectOptions);
  // A function called with `new` that returns an object yields that object.
  const WebSocket = function MemoryWebSocket() {
    return connect();
  } as unknown as MemoryWebSocketConstructor;
  return {
    WebSocket,
    url: "memory://pheby/ws",
    connect,
    close: () => core.close(),
    sweepAttachments: () => core.sweepAttachments(),
  };
}
