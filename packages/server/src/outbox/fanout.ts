import { deltaOffset, FEATURE_DELTA_APPEND, featureOfType, type ServerMessageOf } from "@pheby/protocol";
import type { Outbox, OutboxEvent, Peer, SendHint } from "./outbox.js";

/** What the fanout remembers of a draft being streamed with `delta.append`. */
interface Draft {
  /** The text of the last `message.delta` published. */
  text: string;
  /** Append peers that received that delta, so they hold `text`; others get offset 0 next. */
  synced: Set<Peer>;
}

/** How one peer gets a `message.delta`: v1 cumulative, append from offset 0, or append from the common prefix. */
type DeltaForm = "v1" | "full" | "append";

/**
 * The Outbox that reaches every authenticated peer (it is also the registry
 * of who is connected: {@link peers}). Each event is serialised once per
 * distinct variant among the peers (v1; a `delta.append` encoding; the
 * extension fields a peer enabled), never once per peer, and the copy that
 * is the reply to a peer's request is the only one carrying its `request_id`.
 */
export class Fanout implements Outbox {
  readonly #peers = new Set<Peer>();
  /** Drafts by message_id, from their first delta to their `message.complete`. */
  readonly #drafts = new Map<string, Draft>();

  add(peer: Peer): void {
    this.#peers.add(peer);
  }

  remove(peer: Peer): void {
    this.#peers.delete(peer);
    for (const draft of this.#drafts.values()) draft.synced.delete(peer);
  }

  get size(): number {
    return this.#peers.size;
  }

  /** The authenticated peers, e.g. to find those of one principal. */
  peers(): Iterable<Peer> {
    return this.#peers;
  }

  /**
   * Send an event to every peer it is for. A `message.delta` carries the
   * cumulative text: v1 peers get it as is; `delta.append` peers that received
   * the draft's previous delta get `offset` (the common prefix with it, see
   * {@link deltaOffset}) and the text from there; one that did not (it joined
   * mid-stream) gets offset 0 and the whole text. A draft is forgotten at its
   * `message.complete`.
   *
   * With `only`, the event goes to that peer alone and leaves the drafts
   * alone: an earlier event sent again (a replay), whose delta is the whole
   * draft (offset 0) for an append peer.
   */
  publish(event: OutboxEvent, only?: Peer): void {
    const { message, replyTo, except } = event;
    // An extension's own message type goes only to peers that enabled it, whoever published it.
    const feature = event.feature ?? featureOfType(message.type);
    const frames = new Map<string, string>();
    const delta = message.type === "message.delta" && !only ? this.#draft(message) : undefined;
    let offset: number | undefined;
    for (const peer of only ? [only] : this.#peers) {
      if (feature !== undefined && !peer.features.has(feature)) continue;
      if (peer === except) continue;
      let form: DeltaForm = "v1";
      if (message.type === "message.delta" && peer.features.has(FEATURE_DELTA_APPEND)) {
        form = delta?.draft.synced.has(peer) ? "append" : "full";
        delta?.draft.synced.add(peer);
      }
      const extensions = event.fields ? Object.keys(event.fields).filter((f) => peer.features.has(f)) : [];
      const requestId = replyTo?.peer === peer ? replyTo.requestId : undefined;
      const build = () => {
        let body: object = message;
        if (form === "full" && message.type === "message.delta") body = appendFrame(message, 0);
        if (form === "append" && delta) {
          offset ??= deltaOffset(delta.draft.text, delta.message.text);
          body = appendFrame(delta.message, offset);
        }
        if (requestId !== undefined) body = { ...body, request_id: requestId };
        for (const f of extensions) body = { ...body, ...event.fields![f] };
        return JSON.stringify(body);
      };
      // The reply copy is one peer's own; every other variant is serialised once.
      const key = `${form}|${extensions.join(",")}`;
      let frame = requestId === undefined ? frames.get(key) : undefined;
      if (frame === undefined) {
        frame = build();
        if (requestId === undefined) frames.set(key, frame);
      }
      peer.send(frame, hint(message.type, form));
    }
    if (delta) delta.draft.text = delta.message.text;
    // The draft is final now: nobody needs its offsets any more.
    if (message.type === "message.complete") this.#drafts.delete(message.message_id);
  }

  #draft(message: ServerMessageOf<"message.delta">) {
    let draft = this.#drafts.get(message.message_id);
    if (!draft) {
      draft = { text: "", synced: new Set() };
      this.#drafts.set(message.message_id, draft);
    }
    return { draft, message };
  }
}

/**
 * Append deltas are short but frequent: their repeated envelope (IDs, field names, ts) is most of
 * their bytes, and deflate's context takeover shrinks it to a few bytes, so they are compressed
 * whatever their length. The cost is the deflate context (~256 KiB) that a v1 connection pays too
 * once it streams a long answer; idle ones still never do. A peer's first delta of a message keeps
 * the usual threshold: zlib works off the event loop, so a compressed first frame waits for a busy
 * loop (a burst) where a plain one goes at once.
 */
function hint(type: SendHint["type"], form: DeltaForm): SendHint {
  return form === "append" ? { type, compress: true } : { type };
}

/** An append `message.delta` of a cumulative one, fields in the schema's order. */
function appendFrame(
  msg: ServerMessageOf<"message.delta">,
  offset: number,
): ServerMessageOf<"message.delta"> {
  const { conversation_id, message_id, text, ts } = msg;
  return { type: "message.delta", conversation_id, message_id, offset, text: text.slice(offset), ts };
}
