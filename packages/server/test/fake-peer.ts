import type { Principal } from "../src/auth/principal.js";
import { OWNER } from "../src/auth/principal.js";
import type { Peer, SendHint } from "../src/outbox/outbox.js";

let lastId = 10_000;

/** A Peer that records what the Fanout sends it: frames byte for byte, with their hints. */
export class FakePeer implements Peer {
  readonly id = ++lastId;
  readonly features: ReadonlySet<string>;
  readonly principal: Principal | null = OWNER;
  readonly frames: string[] = [];
  readonly hints: SendHint[] = [];
  /** The frames, parsed, as they arrive. */
  readonly received: Record<string, unknown>[] = [];
  closedWith: number | undefined;

  constructor(features: readonly string[] = []) {
    this.features = new Set(features);
  }

  send(frame: string, hint: SendHint): void {
    this.frames.push(frame);
    this.hints.push(hint);
    this.received.push(JSON.parse(frame) as Record<string, unknown>);
  }

  close(code: number): void {
    this.closedWith = code;
  }
}
