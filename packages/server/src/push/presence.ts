/** What a client last said about its UI (`presence`). */
export interface PresenceState {
  state: "active" | "background";
  conversationId?: string;
}

/**
 * Who is looking at what, per connection. A push for a conversation is skipped only with positive
 * proof that the owner is looking at it: some connection's latest presence is `active` naming that
 * conversation, and that connection has not gone away since. Anything else — no presence ever
 * sent, `background`, another conversation, a closed connection — means "send": a missed
 * notification costs more than a redundant one.
 */
export class Presence {
  readonly #latest = new Map<unknown, PresenceState>();

  /** A connection's latest presence replaces its previous one. */
  update(connection: unknown, presence: PresenceState): void {
    this.#latest.set(connection, presence);
  }

  /** The connection closed (or lost authentication): whatever it said no longer holds. */
  gone(connection: unknown): void {
    this.#latest.delete(connection);
  }

  /** True when some live connection's latest presence is `active` on this conversation. */
  watching(conversationId: string): boolean {
    for (const p of this.#latest.values()) {
      if (p.state === "active" && p.conversationId === conversationId) return true;
    }
    return false;
  }
}
