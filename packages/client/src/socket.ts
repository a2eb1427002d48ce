/** The subset of the WHATWG WebSocket API the client uses (browsers, and `ws` in Node). */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: "open", listener: () => void): void;
  addEventListener(type: "message", listener: (event: { data: unknown }) => void): void;
  addEventListener(type: "close", listener: (event: { code: number; reason: string }) => void): void;
  addEventListener(type: "error", listener: (event: unknown) => void): void;
}

/** A WebSocket constructor, e.g. `globalThis.WebSocket` or `ws`'s default export. */
export type WebSocketConstructor = new (url: string) => WebSocketLike;

/**
 * The runtime's WebSocket: the global one (browsers, Node ≥ 22), else `ws`.
 * The specifier is a variable so browser bundlers do not try to bundle `ws`.
 */
export async function defaultWebSocket(): Promise<WebSocketConstructor> {
  const global = (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
  if (global) return global;
  const specifier = "ws";
  const mod = (await import(/* @vite-ignore */ specifier)) as { default: WebSocketConstructor };
  return mod.default;
}
