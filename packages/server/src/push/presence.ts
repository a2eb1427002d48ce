import { deviceIdOf } from "../auth/principal.js";
import type { Peer } from "../outbox/outbox.js";

/** What a client last said about its UI (`presence`). */
export interface PresenceState {
  state: "active" | "background";
  conversationId?: string;
}

/**
 * Who is looking at what, per connection. A push for a conversation is skipped for a subscription
 * only with positive proof that its own principal is looking at it: some connection of the
 * principal that made the subscription (the owner's, or that device's) last said `active` naming
 * that conversation, and that connection has not gone away since. One device on screen never
 * silences another device or the owner. Anything else — no presence ever sent, `background`,
 * another conversation, a connection that has gone — means "send": a missed notification costs
 * more than a redundant one.
 */
export class Presence {
  /** Weak: a connection that is gone takes what it said with it. */
  readonly #latest = new WeakMap<Peer, PresenceState>();

  /** @param connected the connections still authenticated (the Fanout's peers). */
  constructor(private readonly connected: () => Iterable<Peer>) {}

  /** A connection's latest presence replaces its previous one. */
  update(connection: Peer, presence: PresenceState): void {
    this.#latest.set(connection, presence);
  }

  /**
   * The principals with a connection still connected that last said it is `active` on this
   * conversation, as subscriptions record them: a device's id, or null for the owner.
   */
  watching(conversationId: string): Set<string | null> {
    const lookers = new Set<string | null>();
    for (const connection of this.connected()) {
      const p = this.#latest.get(connection);
      if (p?.state === "active" && p.conversationId === conversationId) {
        lookers.add(deviceIdOf(connection.principal));
      }
    }
    return lookers;
  }
}
