import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { getRequestListener } from "@hono/node-server";
import type { Connections } from "../../connection/connection.js";
import { type WsSettings, WsTransport } from "./server.js";

/** Where a server listens. `url` is the HTTP base URL; the socket is at `ws://host:port/ws`. */
export interface ListenInfo {
  port: number;
  host: string;
  url: string;
}

/** What answers a plain HTTP request (a Hono app's `fetch`). */
export type HttpFetch = Parameters<typeof getRequestListener>[0];

/**
 * The node HTTP server of one port: plain requests go to the HTTP app, `/ws` upgrades to a
 * {@link WsTransport} of `connections`. Listens once; closing it closes the sockets first.
 */
export class HttpListener {
  #server: Server | undefined;
  readonly #sockets: WsTransport;

  constructor(
    connections: Connections,
    private readonly fetch: HttpFetch,
    private readonly settings: WsSettings & { idleTimeoutMs: number },
  ) {
    this.#sockets = new WsTransport(connections, settings);
  }

  /** Whether {@link HttpListener.listen} was called (even if it failed): a server listens once. */
  get listening(): boolean {
    return this.#server !== undefined;
  }

  async listen(port: number, host: string): Promise<ListenInfo> {
    const server = createServer(getRequestListener(this.fetch));
    // Node's requestTimeout (300 s for a whole request) cut slow phone uploads; an idle timeout
    // bounds stalled peers instead. Upgraded sockets are exempt: ws clears the timeout.
    server.requestTimeout = 0;
    server.timeout = this.settings.idleTimeoutMs;
    this.#server = server;
    server.on("upgrade", (req, socket, head) => this.#sockets.handleUpgrade(req, socket, head));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host, () => {
        server.off("error", reject);
        resolve();
      });
    });
    const { port: bound } = server.address() as AddressInfo;
    const urlHost = host.includes(":") ? `[${host}]` : host;
    this.settings.log.info({ host, port: bound }, "listening");
    return { port: bound, host, url: `http://${urlHost}:${bound}` };
  }

  /** The HTTP server closes after the sockets (its upgraded connections are theirs). */
  async close(): Promise<void> {
    await this.#sockets.close();
    const server = this.#server;
    if (!server) return;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }
}
