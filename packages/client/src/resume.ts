// The client side of the `resume` extension: where each conversation is (its last `seq`), which
// conversations are being caught up after a reconnect, and the idempotency keys of sends.
import type { ServerMessage } from "@pheby/protocol";

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
 * What the client knows of each conversation's event log: the highest `seq`
 * it has handled (what `conversation.open { since_seq }` asks from after a
 * reconnect), and which conversations are being caught up right now. While a
 * conversation is caught up, its events that arrive before the answer are
 * dropped: the server logged them before it answered, so the replay (or the
 * snapshot) that follows the answer carries them, exactly once and in order.
 */
export class Positions {
  readonly #seq = new Map<string, number>();
  readonly #syncing = new Set<string>();
  readonly #accepted = new Set<string>();

  /** The last `seq` handled for a conversation, if any. */
  of(conversationId: string): number | undefined {
    return this.#seq.get(conversationId);
  }

  /** A conversation is being re-opened after a reconnect: hold its events until the answer. */
  syncing(conversationId: string): void {
    this.#syncing.add(conversationId);
  }

  /** Give up catching up a conversation (its re-open failed). */
  synced(conversationId: string): void {
    this.#syncing.delete(conversationId);
  }

  /**
   * Account for one frame. Returns false when it must not reach handlers: an
   * event of a conversation being caught up (`isReply` false), or a repeat of
   * a `run.accepted` already handled (a retried send's answer).
   */
  accept(message: ServerMessage, isReply: boolean): boolean {
    const conversationId = (message as { conversation_id?: unknown }).conversation_id;
    if (typeof conversationId !== "string") return true;
    if (message.type === "conversation.resumed" || message.type === "conversation.history") {
      if (isReply) this.#syncing.delete(conversationId);
    } else if (!isReply && this.#syncing.has(conversationId)) {
      return false;
    }
    if (message.type === "run.accepted") {
      if (this.#accepted.has(message.run_id)) return false;
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
    return true;
  }
}
