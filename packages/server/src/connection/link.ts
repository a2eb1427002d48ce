import type { SendHint } from "../outbox/outbox.js";

/**
 * One connection as a transport hands it to a {@link Connection}: how to
 * send and close, and where it comes from. The transport feeds inbound frames
 * to the Connection (`receive`) and tells it when the connection is gone
 * (`closed`). ws (`transport/ws/`) and in-process memory
 * (`transport/memory.ts`) implement it; a new transport implements this and
 * calls `Connections.open`, nothing else.
 */
export interface PeerLink {
  /** Connection ID, for logs (see {@link nextLinkId}). */
  readonly id: number;
  /** The source address the lockout counts against (the transport applies its forwarding rule). */
  readonly address: string;
  /** False once the connection is closing or closed: nothing more is sent. */
  readonly open: boolean;
  /** Send one frame. Over its own limits (a slow reader) the transport may close the link instead. */
  send(frame: string, hint: SendHint): void;
  /** Close with a WebSocket close code (the protocol's `CLOSE_CODES`). */
  close(code: number, reason: string): void;
}

let lastId = 0;

/** A fresh connection ID, unique in this process whatever the transport. */
export function nextLinkId(): number {
  lastId += 1;
  return lastId;
}
