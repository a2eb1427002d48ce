import {
  deltaOffset,
  FEATURE_DELTA_APPEND,
  FEATURE_THOUGHTS,
  featureOfType,
  type ServerMessage,
  type ServerMessageOf,
} from "@pheby/protocol";
import { type Outbox, type OutboxEvent, type Peer, replyCopy, type SendHint } from "./outbox.js";
import { type ThinningClock, V1Copies } from "./thinning.js";

/**
 * The streamed deltas: a message's answer, and (`thoughts`) a thought, each published cumulative (the
 * whole text so far) and cut per peer into append deltas. A thought's are append deltas on every peer
 * that gets them; a message's only on `delta.append` peers.
 */
type StreamDelta = ServerMessageOf<"message.delta"> | ServerMessageOf<"thought.delta">;

/** The stream a delta or a complete event belongs to: its message, or its thought; undefined for any other event. */
function streamOf(message: ServerMessage): string | undefined {
  switch (message.type) {
    case "message.delta":
    case "message.complete":
      return message.message_id;
    case "thought.delta":
    case "thought.complete":
      return message.thought_id;
    default:
      return undefined;
  }
}

/** What the fanout remembers of a draft being streamed, from its first delta to its complete event. */
interface Draft {
  /** The text of the last delta published. */
  text: string;
  /** Append peers that received that delta, so they hold `text`; others get offset 0 next. */
  synced: Set<Peer>;
  conversationId: string | null;
  /** Its v1 copies, when they are thinned. */
  v1: V1Copies | undefined;
}

/** How one peer gets a `message.delta`: v1 cumulative, append from offset 0, or append from the common prefix. */
type DeltaForm = "v1" | "full" | "append";

/** Options of the {@link Fanout}. */
export interface FanoutOptions {
  /**
   * Thin the v1 copies of long answers (thinning.ts), on this clock; without it every peer gets
   * every delta.
   */
  thinning?: ThinningClock;
}

/**
 * The Outbox that reaches every authenticated peer (it is also the registry
 * of who is connected: {@link peers}). Each event is serialised once per
 * distinct variant among the peers (v1; a `delta.append` encoding; the
 * extension fields a peer enabled), never once per peer. An event that
 * answers a request ({@link OutboxEvent.replyTo}) gets its `request_id` here,
 * on the requester's copy alone or, under "broadcast_all", on every copy.
 */
export class Fanout implements Outbox {
  readonly #peers = new Set<Peer>();
  /** Drafts by message_id (or thought_id), from their first delta to their complete event. */
  readonly #drafts = new Map<string, Draft>();
  readonly #thinning: ThinningClock | undefined;

  constructor(options: FanoutOptions = {}) {
    this.#thinning = options.thinning;
  }

  add(peer: Peer): void {
    this.#peers.add(peer);
  }

  remove(peer: Peer): void {
    this.#peers.delete(peer);
    for (const draft of this.#drafts.values()) {
      draft.synced.delete(peer);
      draft.v1?.holders.delete(peer);
    }
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
   * With thinning, a delta whose v1 frame no longer fits deflate's window may
   * be held back from v1 peers ({@link V1Copies}): it goes to them when its gap
   * has passed, before any other event of its conversation, or never if its
   * `message.complete` (the whole text) comes first. Append peers get every delta.
   *
   * With `only`, the event goes to that peer alone and leaves the drafts
   * alone: an earlier event sent again (a replay), whose delta is the whole
   * draft (offset 0) for an append peer.
   *
   * A `thought.delta` (published cumulative, offset 0) is handled as a
   * message's delta on `delta.append` peers, on every peer it goes to; it is
   * never thinned (only `thoughts` peers get it, and their deltas stay small).
   */
  publish(event: OutboxEvent, only?: Peer): void {
    const { message } = event;
    if (only) {
      // A replayed draft that is the one held back: that peer is not sent it a second time.
      const v1 = message.type === "message.delta" ? this.#drafts.get(message.message_id)?.v1 : undefined;
      if (v1 && !only.features.has(FEATURE_DELTA_APPEND) && textOf(v1.held) === textOf(event)) {
        v1.holders.add(only);
      }
      this.#deliver(event, [only]);
      // A replayed delta that is the latest draft leaves that peer holding it: the next live one appends.
      if (message.type === "thought.delta" && only.features.has(FEATURE_THOUGHTS)) {
        const draft = this.#drafts.get(message.thought_id);
        if (draft && draft.text === message.text) draft.synced.add(only);
      }
      return;
    }
    const stream = streamOf(message);
    // Text held back goes before any other event of its conversation, as the engine flushes its own.
    if (event.conversationId !== null) this.#flushHeld(event.conversationId, stream ?? "");
    if (message.type === "message.delta" || message.type === "thought.delta") {
      const draft = this.#draft(stream!, event.conversationId, message.type === "message.delta");
      const frames = new Map<string, string>();
      let v1Now = true;
      if (draft.v1) {
        // The v1 frame without extension fields, as #deliver would build it.
        const frame = JSON.stringify(message);
        frames.set(variantKey("v1", []), frame);
        v1Now = draft.v1.offer(event, Buffer.byteLength(frame));
      }
      this.#deliver(event, v1Now ? this.#peers : this.#select(true), { draft, message }, frames);
      draft.text = message.text;
      return;
    }
    this.#deliver(event, this.#peers);
    // The draft is final now: nobody needs its offsets, nor a held delta, any more.
    if (stream !== undefined) {
      this.#drafts.get(stream)?.v1?.drop();
      this.#drafts.delete(stream);
    }
  }

  /** Send `event` to `peers` (those it is for), serialised once per variant. */
  #deliver(
    event: OutboxEvent,
    peers: Iterable<Peer>,
    delta?: { draft: Draft; message: StreamDelta },
    frames = new Map<string, string>(),
  ): void {
    const { message, replyTo, except } = event;
    // An extension's own message type goes only to peers that enabled it, whoever published it.
    const feature = event.feature ?? featureOfType(message.type);
    let offset: number | undefined;
    for (const peer of peers) {
      if (feature !== undefined && !peer.features.has(feature)) continue;
      if (peer === except) continue;
      let form: DeltaForm = "v1";
      const append =
        message.type === "thought.delta" ||
        (message.type === "message.delta" && peer.features.has(FEATURE_DELTA_APPEND));
      if (append) {
        form = delta?.draft.synced.has(peer) ? "append" : "full";
        delta?.draft.synced.add(peer);
      }
      const extensions = event.fields ? Object.keys(event.fields).filter((f) => peer.features.has(f)) : [];
      // The Fanout is where a reply's request_id is written: on every copy, or on the requester's.
      const everyCopy = replyTo?.rule === "broadcast_all";
      const requestId = everyCopy || replyTo?.peer === peer ? replyTo?.requestId : undefined;
      const build = () => {
        let body: { type: string } = message;
        if (form === "full" && (message.type === "message.delta" || message.type === "thought.delta")) {
          body = appendFrame(message, 0);
        }
        if (form === "append" && delta) {
          offset ??= deltaOffset(delta.draft.text, delta.message.text);
          body = appendFrame(delta.message, offset);
        }
        body = replyCopy(body, requestId, replyTo?.rule ?? "broadcast");
        for (const f of extensions) body = { ...body, ...event.fields![f] };
        return JSON.stringify(body);
      };
      // The requester's own copy is its alone; every other variant is serialised once.
      const own = requestId !== undefined && !everyCopy;
      const key = variantKey(form, extensions);
      let frame = own ? undefined : frames.get(key);
      if (frame === undefined) {
        frame = build();
        if (!own) frames.set(key, frame);
      }
      peer.send(frame, hint(message.type, form));
    }
  }

  /** Send now what is held back from v1 peers in the conversation, except of message `except`. */
  #flushHeld(conversationId: string, except: string): void {
    for (const [id, draft] of this.#drafts) {
      if (draft.conversationId === conversationId && id !== except) draft.v1?.flush();
    }
  }

  /** The peers with `delta.append` (`append`), or those without it that do not hold `held`. */
  *#select(append: boolean, holders?: ReadonlySet<Peer>): Iterable<Peer> {
    for (const peer of this.#peers) {
      if (peer.features.has(FEATURE_DELTA_APPEND) === append && !holders?.has(peer)) yield peer;
    }
  }

  /** The draft of stream `id`; a message's (`thinned`) has v1 copies to thin, a thought's none. */
  #draft(id: string, conversationId: string | null, thinned: boolean): Draft {
    let draft = this.#drafts.get(id);
    if (!draft) {
      const created: Draft = { text: "", synced: new Set(), conversationId, v1: undefined };
      if (this.#thinning && thinned) {
        const v1 = new V1Copies(this.#thinning, (held) =>
          this.#deliver(held, this.#select(false, v1.holders)),
        );
        created.v1 = v1;
      }
      draft = created;
      this.#drafts.set(id, draft);
    }
    return draft;
  }
}

/** The cache key of one serialised variant: the delta's form and the extensions whose fields it carries. */
function variantKey(form: DeltaForm, extensions: readonly string[]): string {
  return `${form}|${extensions.join(",")}`;
}

/** The text of a held or replayed delta event. */
function textOf(event: OutboxEvent | undefined): string | undefined {
  return event?.message.type === "message.delta" ? event.message.text : undefined;
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

/** An append delta of a cumulative one, fields in the schema's order. */
function appendFrame<T extends StreamDelta>(msg: T, offset: number): T {
  if (msg.type === "thought.delta") {
    const { conversation_id, run_id, thought_id, text, ts } = msg;
    const frame = {
      type: msg.type,
      conversation_id,
      run_id,
      thought_id,
      offset,
      text: text.slice(offset),
      ts,
    };
    return frame as T;
  }
  const { conversation_id, message_id, text, ts } = msg;
  return { type: "message.delta", conversation_id, message_id, offset, text: text.slice(offset), ts } as T;
}
