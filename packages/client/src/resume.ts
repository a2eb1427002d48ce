// The client side of the `resume` extension (docs/protocol.md, "Extension: resume after a drop"):
// where each conversation is (its last `seq`), which conversations are being caught up after a
// reconnect, and the idempotency keys of sends. The send queue and the retry of a send whose reply
// was lost live with the requests (requests.ts); this is what they consult. Mirrors the Kotlin
// client's Resume.kt.
import { FEATURE_RESUME, type ServerMessage } from "@pheby/protocol";
import type { ClientExtension } from "./extensions.js";

/**
 * A new `client_message_id`: 32 random hex characters (128 bits), from the
 * platform's CSPRNG (`crypto.getRandomValues`, in browsers and Node alike).
 * Give one to a `chat.send` yourself to match the user message in history
 * (`messages[].client_message_id`) with your optimistic bubble.
 */
export function newClientMessageId(): string {
  const bytes = new Uint8Array(16);
  globalThis.crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** How many `run.accepted` run IDs are remembered to drop a repeat (a retried send's reply after its replay). */
const REMEMBERED_RUNS = 256;

/**
 * `resume` inside the client: the highest `seq` handled per conversation (what a re-open after a drop
 * asks from), the conversations being caught up, and the run IDs of the `run.accepted` already handled.
 *
 * While a conversation is caught up (from a reconnect's `ready` until its re-open is answered), its
 * events are dropped: the server logged them before it answered, so the replay (or the snapshot) that
 * follows the answer carries them, exactly once and in order. A `run.accepted` seen before is kept from
 * handlers too (a retried send's answer, after its replay); its request still gets it.
 */
export class Resume implements ClientExtension {
  readonly feature = FEATURE_RESUME;
  readonly #seq = new Map<string, number>();
  readonly #syncing = new Set<string>();
  readonly #accepted = new Set<string>();
  /** The positions at the last reconnect's `ready`, which the re-opens after it ask from. */
  #caught: Map<string, number | undefined> | undefined;

  /** The last `seq` handled for a conversation, if any. */
  position(conversationId: string): number | undefined {
    return this.#seq.get(conversationId);
  }

  /** A reconnect's `ready`: hold these conversations' events from now on, until each is re-opened. */
  catchUp(conversationIds: Iterable<string>): void {
    this.#caught = new Map();
    for (const id of conversationIds) {
      this.#caught.set(id, this.#seq.get(id));
      this.#syncing.add(id);
    }
  }

  /**
   * The `since_seq` to re-open each of `conversationIds` from: the one caught at the reconnect's
   * `ready`, or, for a resync the app asked for, the current one (and its events are held from now on).
   */
  reopenFrom(conversationIds: readonly string[]): Map<string, number | undefined> {
    const caught = this.#caught;
    this.#caught = undefined;
    if (caught) return caught;
    const since = new Map<string, number | undefined>();
    for (const id of conversationIds) {
      since.set(id, this.#seq.get(id));
      this.#syncing.add(id);
    }
    return since;
  }

  /** Stop holding a conversation's events (its re-open failed). */
  synced(conversationId: string): void {
    this.#syncing.delete(conversationId);
  }

  onFrame(message: ServerMessage, _link: unknown, isReply: boolean): ServerMessage | undefined {
    const conversationId = (message as { conversation_id?: unknown }).conversation_id;
    if (typeof conversationId !== "string") return message;
    if (message.type === "conversation.resumed" || message.type === "conversation.history") {
      if (isReply) this.#syncing.delete(conversationId);
    } else if (!isReply && this.#syncing.has(conversationId)) {
      return undefined;
    }
    if (message.type === "run.accepted") {
      if (this.#accepted.has(message.run_id)) return undefined;
      this.#accepted.add(message.run_id);
      if (this.#accepted.size > REMEMBERED_RUNS) this.#accepted.delete(this.#accepted.values().next().value!);
    }
    const seq = (message as { seq?: unknown }).seq;
    if (message.type === "conversation.deleted") this.#seq.delete(conversationId);
    // A snapshot replaces what we had, position included; an event moves it forward.
    else if (message.type === "conversation.history" && typeof seq === "number")
      this.#seq.set(conversationId, seq);
    else if (typeof seq === "number" && seq > (this.#seq.get(conversationId) ?? -1))
      this.#seq.set(conversationId, seq);
    return message;
  }
}
