// A scripted Pheby peer on 127.0.0.1 for client unit tests. It stands in for a
// remote server so the client's edge cases (drops, bad frames, silence) can be
// produced on demand; end-to-end behaviour is tested against the real
// @pheby/server in packages/server.
import { createServer, STATUS_CODES } from "node:http";
import type { AddressInfo } from "node:net";
import { WebSocket, WebSocketServer } from "ws";

export interface PeerConnection {
  socket: WebSocket;
  received: Record<string, unknown>[];
}

export const TS = "2026-09-02T18:00:00.000Z";

/** A `conversation.history` of a conversation with nothing in it yet (no `request_id`), with `fields` over it. */
export function emptyHistory(conversation_id: string, fields: Record<string, unknown> = {}) {
  return {
    type: "conversation.history",
    conversation_id,
    messages: [],
    has_more: false,
    attachments: [],
    run: null,
    tools: [],
    approvals: [],
    clarifications: [],
    ...fields,
  };
}

export class ScriptedPeer {
  readonly connections: PeerConnection[] = [];
  private readonly server: WebSocketServer;
  /** Answers each frame; return undefined to stay silent. */
  handler: (frame: Record<string, unknown>, conn: PeerConnection) => unknown[] | undefined = defaultHandler;

  private constructor(server: WebSocketServer) {
    this.server = server;
    server.on("connection", (socket) => {
      const conn: PeerConnection = { socket, received: [] };
      this.connections.push(conn);
      socket.on("message", (data) => {
        const frame = JSON.parse(String(data)) as Record<string, unknown>;
        conn.received.push(frame);
        for (const reply of this.handler(frame, conn) ?? []) {
          socket.send(typeof reply === "string" ? reply : JSON.stringify(reply));
        }
      });
    });
  }

  static async start(): Promise<ScriptedPeer> {
    const server = new WebSocketServer({ host: "127.0.0.1", port: 0, path: "/ws" });
    await new Promise<void>((resolve) => server.once("listening", () => resolve()));
    return new ScriptedPeer(server);
  }

  get url(): string {
    return `ws://127.0.0.1:${(this.server.address() as AddressInfo).port}/ws`;
  }

  broadcast(frame: unknown): void {
    for (const c of this.connections)
      if (c.socket.readyState === WebSocket.OPEN) c.socket.send(JSON.stringify(frame));
  }

  async waitForConnections(n: number): Promise<void> {
    while (this.connections.length < n) await new Promise((r) => setTimeout(r, 5));
  }

  async close(): Promise<void> {
    for (const c of this.connections) c.socket.terminate();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

export function defaultHandler(
  frame: Record<string, unknown>,
  _conn?: PeerConnection,
): unknown[] | undefined {
  const request_id = frame.request_id;
  switch (frame.type) {
    case "hello":
      if (frame.secret !== "s3cret") {
        return [
          { type: "error", request_id, error: { code: "unauthorized", message: "Unauthorized" }, ts: TS },
        ];
      }
      return [{ type: "ready", protocol_version: 1, server: "pheby", ts: TS, request_id }];
    case "ping":
      return [{ type: "pong", ts: TS, request_id }];
    case "conversation.create":
      return [
        { type: "conversation.created", conversation_id: "c1", name: frame.name ?? "New chat", request_id },
        { type: "conversation.updated", conversation_id: "c1", name: frame.name ?? "New chat" },
      ];
    case "conversation.open":
      if (frame.conversation_id === "gone") {
        return [
          { type: "error", request_id, error: { code: "conversation_not_found", message: "x" }, ts: TS },
        ];
      }
      return [{ ...emptyHistory(String(frame.conversation_id)), request_id }];
    default:
      return undefined;
  }
}

/** An HTTP server on 127.0.0.1 that answers every request and WebSocket upgrade with `status`. */
export async function refusingUpgrades(status: number): Promise<{ port: number; close(): Promise<void> }> {
  const server = createServer((_req, res) => res.writeHead(status).end());
  server.on("upgrade", (_req, socket) =>
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`,
    ),
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
