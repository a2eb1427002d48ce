// How a negotiated extension of v1 plugs into the client (the Kotlin client's Extensions.kt has the
// same shape). Each extension the client implements is one instance for the client's whole life
// (state that must survive a reconnect, such as resume's positions, lives in it), active on every
// connection whose `ready.features` enabled it. The app asks for a feature by name in
// `PhebyClientOptions.features` and gets its frames and requests through `on()`, `request()` and the
// facade's typed calls.
import { applyDelta, FEATURE_DELTA_APPEND, FEATURE_THOUGHTS, type ServerMessage } from "@pheby/protocol";

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
 * Texts that stream as append deltas (`offset` + the text from there on), by ID, and the repair of a
 * missed one: what `message.delta` (`delta.append`) and `thought.delta` (`thoughts`) share, so both are
 * stitched by one rule (`applyDelta`).
 *
 * A delta whose `offset` lies beyond the text held means one was missed (docs/protocol.md): it is kept
 * from handlers and the conversation is re-opened (`conversation.open`, no `request_id`), once until its
 * `conversation.history` arrives as an event; that snapshot holds the whole texts so far, from which
 * later deltas continue. Every later delta of the broken text misses too, and one snapshot repairs
 * them all (not one re-open per delta). One instance serves both features, so a gap in both streams
 * costs one re-open.
 */
export class AppendTexts {
  /** Text so far by ID (a message_id or a thought_id: distinct IDs). */
  private readonly texts = new Map<string, string>();
  /** Conversations re-opened after a missed delta, until their `conversation.history` arrives. */
  private readonly reopening = new Set<string>();

  /** A new connection: the server starts every text over (offset 0, whole text), also in a replay. */
  reset(): void {
    this.texts.clear();
    this.reopening.clear();
  }

  /**
   * The whole text after `delta` (a `message.delta` or `thought.delta` of `id`), or undefined when one
   * was missed: then the conversation is re-opened (once) on `link`.
   */
  apply(
    id: string,
    delta: { conversation_id: string; offset?: number | undefined; text: string },
    link: ExtensionLink,
  ): string | undefined {
    let text: string;
    try {
      text = applyDelta(this.texts.get(id) ?? "", delta);
    } catch {
      if (!this.reopening.has(delta.conversation_id)) {
        this.reopening.add(delta.conversation_id);
        link.send({ type: "conversation.open", conversation_id: delta.conversation_id });
      }
      return undefined;
    }
    this.texts.set(id, text);
    return text;
  }

  /** The text of `id` is final (its `*.complete` arrived). */
  complete(id: string): void {
    this.texts.delete(id);
  }

  /** A snapshot of the conversation arrived: it repairs the conversation; `texts` are its texts so far. */
  snapshot(conversationId: string, texts: Iterable<readonly [id: string, text: string]>): void {
    this.reopening.delete(conversationId);
    for (const [id, text] of texts) this.texts.set(id, text);
  }
}

/**
 * `delta.append`: each `message.delta` carries only the text from `offset` on. Stitches them back into
 * v1's cumulative form (no `offset`), so handlers see the whole draft whatever was negotiated. A missed
 * delta is repaired as {@link AppendTexts} says; the snapshot's `run.text` is the whole draft.
 */
export class DeltaAppend implements ClientExtension {
  readonly feature = FEATURE_DELTA_APPEND;

  constructor(private readonly texts: AppendTexts) {}

  onConnected(): void {
    this.texts.reset();
  }

  onFrame(message: ServerMessage, link: ExtensionLink): ServerMessage | undefined {
    switch (message.type) {
      case "message.delta": {
        const { offset: _offset, ...cumulative } = message;
        const text = this.texts.apply(message.message_id, message, link);
        return text === undefined ? undefined : { ...cumulative, text };
      }
      case "message.complete":
        this.texts.complete(message.message_id);
        return message;
      case "conversation.history":
        this.texts.snapshot(
          message.conversation_id,
          message.run ? [[message.run.message_id, message.run.text]] : [],
        );
        return message;
      default:
        return message;
    }
  }
}

/**
 * `thoughts`: the agent's thinking streams as `thought.delta`s with `delta.append`'s rules (always
 * append deltas, whatever else was negotiated). Stitched like message deltas ({@link AppendTexts}), so
 * handlers get each `thought.delta` with `offset: 0` and the whole thought so far: a valid delta that
 * also reads as the cumulative text. The snapshot's `thoughts` (the active run's thoughts so far) are
 * where later deltas continue from after a re-open.
 */
export class Thoughts implements ClientExtension {
  readonly feature = FEATURE_THOUGHTS;

  constructor(private readonly texts: AppendTexts) {}

  onConnected(): void {
    this.texts.reset();
  }

  onFrame(message: ServerMessage, link: ExtensionLink): ServerMessage | undefined {
    switch (message.type) {
      case "thought.delta": {
        const text = this.texts.apply(message.thought_id, message, link);
        return text === undefined ? undefined : { ...message, offset: 0, text };
      }
      case "thought.complete":
        this.texts.complete(message.thought_id);
        return message;
      case "conversation.history":
        this.texts.snapshot(
          message.conversation_id,
          // A thought still streaming goes on from its text so far.
          (message.thoughts ?? []).filter((t) => !t.complete).map((t) => [t.thought_id, t.text] as const),
        );
        return message;
      default:
        return message;
    }
  }
}
