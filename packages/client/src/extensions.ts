// How a negotiated extension of v1 plugs into the client (the Kotlin client's Extensions.kt has the
// same shape). Each extension the client implements is one instance for the client's whole life
// (state that must survive a reconnect, such as resume's positions, lives in it), active on every
// connection whose `ready.features` enabled it. The app asks for a feature by name in
// `PhebyClientOptions.features` and gets its frames and requests through `on()`, `request()` and the
// facade's typed calls.
import { applyDelta, FEATURE_DELTA_APPEND, type ServerMessage } from "@pheby/protocol";

/** What an extension can do on the connection whose frames it sees. */
export interface ExtensionLink {
  /** Send a frame on this connection, without waiting for anything; false when it is closed. */
  send(frame: { type: string } & Record<string, unknown>): boolean;
}

/** A Pheby extension the client implements, enabled per connection by `hello.features` / `ready.features`. */
export interface ClientExtension {
  /** Its `hello.features` name. */
  readonly feature: string;
  /**
   * A connection enabled the feature: called at its `ready`, before any later frame and before
   * requests can use it (so what `link` is sent here goes first).
   */
  onConnected?(link: ExtensionLink, reconnected: boolean): void;
  /**
   * Every frame of such a connection, in order, before anyone sees it: the frame to deliver to
   * handlers, or undefined to keep it from them. `isReply`: it answers a request waiting on this
   * connection (which gets it either way).
   */
  onFrame?(message: ServerMessage, link: ExtensionLink, isReply: boolean): ServerMessage | undefined;
}

/**
 * `delta.append`: each `message.delta` carries only the text from `offset` on. Stitches them back into
 * v1's cumulative form (no `offset`), so handlers see the whole draft whatever was negotiated.
 *
 * A delta whose `offset` lies beyond the draft held means one was missed (docs/protocol.md): it is kept
 * from handlers and the conversation is re-opened (`conversation.open`, no `request_id`); the
 * `conversation.history` that answers arrives as an event, and its `run.text` is the whole draft,
 * from which later deltas continue.
 */
export class DeltaAppend implements ClientExtension {
  readonly feature = FEATURE_DELTA_APPEND;
  /** Draft text by message_id. */
  private readonly drafts = new Map<string, string>();
  /**
   * Conversations re-opened after a missed delta, until their `conversation.history` arrives: every
   * later delta of the broken draft misses too, and one snapshot repairs them all (not one per delta).
   */
  private readonly reopening = new Set<string>();

  // The server starts every draft over (offset 0, whole text) on a new connection and in a replay.
  onConnected(): void {
    this.drafts.clear();
    this.reopening.clear();
  }

  onFrame(message: ServerMessage, link: ExtensionLink): ServerMessage | undefined {
    switch (message.type) {
      case "message.delta": {
        const { offset: _offset, ...cumulative } = message;
        let text: string;
        try {
          text = applyDelta(this.drafts.get(message.message_id) ?? "", message);
        } catch {
          if (!this.reopening.has(message.conversation_id)) {
            this.reopening.add(message.conversation_id);
            link.send({ type: "conversation.open", conversation_id: message.conversation_id });
          }
          return undefined;
        }
        this.drafts.set(message.message_id, text);
        return { ...cumulative, text };
      }
      case "message.complete":
        this.drafts.delete(message.message_id);
        return message;
      case "conversation.history":
        // The snapshot's run text is the whole draft so far; later deltas continue from it.
        this.reopening.delete(message.conversation_id);
        if (message.run) this.drafts.set(message.run.message_id, message.run.text);
        return message;
      default:
        return message;
    }
  }
}
