/** What a client last said about its UI (`presence`). */
export interface PresenceState {
  state: "active" | "background";
  conversationId?: string;
}

/**
 * Who is looking at what, per connection. A push for a conversation is skipped only with positive
 * proof that the owner is looking at it: some connection's latest presence is `active` naming that
 * conversation, and that connection has not gone away since. Anything else — no presence ever
 * sent, `background`, another conversation, a connection that has gone — means "send": a missed
 * notification costs more than a redundant one.
 */
export class Presence {
  /** Weak: a connection that is gone takes what it said with it. */
  readonly #latest = new WeakMap<object, PresenceState>();

  /** @param connected the connections still authenticated (the Fanout's peers). */
  constructor(private readonly connected: () => Iterable<object>) {}

  /** A connection's latest presence replaces its previous one. */
  update(connection: object, presence: PresenceState): void {
    this.#latest.set(connection, presence);
  }

  /** True when some connection still connected last said it is `active` on this conversation. */
  watching(conversationId: string): boolean {
    for (const connection of this.connected()) {
      const p = this.#latest.get(connection);
      if (p?.state === "active" && p.conversationId === conversationId) return true;
    }
    return false;
  }
}
