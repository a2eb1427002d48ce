// The client side of the `push` extension (docs/protocol.md, "Extension: push notifications"): the
// presence this UI last said, repeated on every connection that enabled `push` (a new connection has
// none). Subscriptions are plain requests on the facade. Mirrors the Kotlin client's PushPresence.
import { FEATURE_PUSH, type PresenceState } from "@pheby/protocol";
import type { ClientExtension, ExtensionLink } from "./extensions.js";

/** What `presence` says: whether this UI is in front, and which conversation it shows. */
export interface Presence {
  state: PresenceState;
  conversation_id?: string;
}

/** `push`'s presence: remembered, said on the current connection, and again on each new one. */
export class PushPresence implements ClientExtension {
  readonly feature = FEATURE_PUSH;
  private last: Presence | undefined;

  onConnected(link: ExtensionLink): void {
    if (this.last) link.send({ type: "presence", ...this.last });
  }

  /** Remember `presence` and say it on `link`: the current connection, when it enabled `push`. */
  say(presence: Presence, link: ExtensionLink | undefined): void {
    this.last = presence;
    link?.send({ type: "presence", ...presence });
  }
}
