// The benchmark clients: authenticated `ws` connections that count the raw
// bytes the server sends them (frame headers and compression included), and
// time-stamp every frame as it arrives.
import WebSocket from "ws";
import { wallNow } from "./stream-text.js";

export const SECRET = "bench-secret-0123456789";

export interface Frame {
  type: string;
  text?: string;
  run_id?: string;
  conversation_id?: string;
  request_id?: string;
  [key: string]: unknown;
}

/** One authenticated bench connection. */
export class BenchClient {
  /** Bytes read from the TCP socket since the handshake (or the last {@link resetBytes}). */
  bytes = 0;
  readonly #listeners = new Set<(frame: Frame, at: number) => void>();

  private constructor(readonly ws: WebSocket) {}

  /**
   * Connect and say hello. `deflate` offers permessage-deflate as ws does by default (browsers too);
   * `features` are asked for in the hello (e.g. `delta.append`).
   */
  static async connect(port: number, deflate: boolean, features?: string[]): Promise<BenchClient> {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`, { perMessageDeflate: deflate });
    const client = new BenchClient(ws);
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("error", reject);
    });
    // Prepended: ws parses (and emits messages) in its own data listener, so counting after it
    // would miss the bytes of the read that carried the frame being handled.
    (ws as unknown as { _socket: NodeJS.ReadableStream })._socket.prependListener("data", (b: Buffer) => {
      client.bytes += b.length;
    });
    ws.on("message", (data) => {
      const at = wallNow();
      const frame = JSON.parse(String(data)) as Frame;
      for (const listener of [...client.#listeners]) listener(frame, at);
    });
    const ready = client.next((f) => f.type === "ready" || f.type === "error");
    client.send({ type: "hello", secret: SECRET, protocol_version: 1, ...(features ? { features } : {}) });
    const first = await ready;
    if (first.type !== "ready") throw new Error(`handshake failed: ${JSON.stringify(first)}`);
    const enabled = (first.features as string[] | undefined) ?? [];
    for (const f of features ?? [])
      if (!enabled.includes(f)) throw new Error(`the server did not enable ${f}`);
    return client;
  }

  /** Whether the server accepted permessage-deflate on this connection. */
  get deflated(): boolean {
    return this.ws.extensions.includes("permessage-deflate");
  }

  send(frame: Record<string, unknown>): void {
    this.ws.send(JSON.stringify(frame));
  }

  /** Call `listener` with every frame and its arrival time (wall-clock ms) until the returned function is called. */
  on(listener: (frame: Frame, at: number) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** The next frame matching `pred`. */
  next(pred: (f: Frame) => boolean): Promise<Frame> {
    return new Promise((resolve) => {
      const off = this.on((f) => {
        if (pred(f)) {
          off();
          resolve(f);
        }
      });
    });
  }

  async request(frame: Record<string, unknown>, type: string): Promise<Frame> {
    const request_id = `r${Math.random().toString(36).slice(2)}`;
    const reply = this.next((f) => f.request_id === request_id);
    this.send({ ...frame, request_id });
    const got = await reply;
    if (got.type !== type) throw new Error(`expected ${type}, got ${JSON.stringify(got).slice(0, 300)}`);
    return got;
  }

  close(): void {
    this.ws.terminate();
  }
}
