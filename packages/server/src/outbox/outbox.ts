/**
 * The one seam between the core and whoever listens: the core (runs,
 * decisions, handlers) publishes typed events with their conversation to an
 * {@link Outbox} and never learns how, or to whom, bytes travel. The
 * {@link Fanout} is the Outbox that serialises and sends; a wrapper that
 * implements Outbox and forwards to it (a resume log stamping `seq`, a push
 * notifier) plugs in between without touching the core (docs/architecture.md).
 */
import type { ReplyRule, ServerMessage, ServerMessageType } from "@pheby/protocol";
import type { Principal } from "../auth/principal.js";

/** How a frame should travel; the transport applies what it can. */
export interface SendHint {
  /** The message type, for logs. */
  type: ServerMessageType;
  /** Compress even a short frame (append deltas); undefined: the transport's own threshold. */
  compress?: boolean;
}

/** An authenticated connection as the outbox sees it: what it enabled, who it is, how to reach it. */
export interface Peer {
  /** Connection ID, for logs. */
  readonly id: number;
  /** The extensions this connection enabled in its hello (`ready.features`). */
  readonly features: ReadonlySet<string>;
  /** What it authenticated as; null only before its hello succeeded (such a peer never receives events). */
  readonly principal: Principal | null;
  /** Send one serialised frame. */
  send(frame: string, hint: SendHint): void;
  /** Close the connection (e.g. a revoked credential). */
  close(code: number, reason: string): void;
}

/**
 * The protocol's reply rules, as `@pheby/protocol`'s tables name them: how the answer to a request
 * travels. "requester": to the requester alone, with its `request_id`. "broadcast": an event every
 * connection gets, of which only the requester's copy carries the `request_id` (`run.accepted`).
 * "broadcast_all": an event every connection gets, every copy with the `request_id` (the cancel's
 * `run.finished`, a `*.resolved`).
 */
export type { ReplyRule };

/**
 * Who caused an event: the peer whose request it answers and that request's
 * ID. Both optional: a run started by the server (unsolicited output, later a
 * queue or a schedule) has no peer, and a request may carry no `request_id`.
 * The core passes an origin along untouched; only the Fanout writes its
 * `request_id` into a frame.
 */
export interface Origin {
  peer?: Peer;
  requestId?: string;
  /**
   * How an event published with this origin as its `replyTo` answers the request: "broadcast"
   * (also when unset) or "broadcast_all". The handler that hands the origin to the core names it.
   */
  rule?: Exclude<ReplyRule, "requester">;
}

/** One event as the core publishes it. */
export interface OutboxEvent {
  /** The v1 message every peer gets (unless {@link feature} narrows who). */
  message: ServerMessage;
  /**
   * The conversation it belongs to, also for messages whose v1 form does not
   * name it (`approval.resolved`, `clarify.resolved`); null for events of no
   * conversation (a global model or reasoning change).
   */
  conversationId: string | null;
  /**
   * The event is also the reply to this request: `replyTo.peer`'s copy carries `replyTo.requestId`
   * (`rule` "broadcast_all": every copy does). See {@link ReplyRule}.
   */
  replyTo?: Origin;
  /**
   * Deliver only to peers that enabled this extension. An extension's own message type needs no
   * such field (the Fanout restricts it by its type); set it to narrow a v1 type (e.g. `expiry`'s notice).
   */
  feature?: string;
  /** Not to this peer: it got another message as its reply (`schedule.created` vs the others' `schedule.changed`). */
  except?: Peer;
  /**
   * Fields only peers that enabled an extension get, by extension name (e.g.
   * resume's `seq`), appended after the v1 fields (and after a reply's
   * `request_id`). Peers without any of them get the v1 frame byte for byte.
   */
  fields?: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  /**
   * Deliver only to the peers it accepts (`inbox`: one reader's connections, whose `unread` changed).
   * Not kept in the resume log: an event that has it is about one moment's audience.
   */
  to?: (peer: Peer) => boolean;
  /**
   * Fields that differ per reader (`readerOf` a peer's principal), for the peers that enabled
   * `feature`, after every other field; a field already in the frame keeps its place and takes this
   * value (`inbox`: each reader's own `unread`). Not kept in the resume log.
   */
  readerFields?: {
    feature: string;
    of(reader: string): Readonly<Record<string, unknown>>;
  };
}

/** Where the core writes its events. */
export interface Outbox {
  publish(event: OutboxEvent): void;
}

/** The event of a message that names its conversation in `conversation_id` (or of none when it has no such field). */
export function eventOf(message: ServerMessage, replyTo?: Origin): OutboxEvent {
  const conversationId = "conversation_id" in message ? (message.conversation_id ?? null) : null;
  return replyTo === undefined ? { message, conversationId } : { message, conversationId, replyTo };
}

/**
 * `body` as the copy that carries `requestId`, the one place a `request_id` is written into a
 * reply: right after `type` under "broadcast_all" (every copy is the reply, as the spec shows its
 * `*.resolved` and the cancel's `run.finished`), after the message's own fields otherwise. Extension
 * fields go after it.
 */
export function replyCopy<T extends { type: string }>(
  body: T,
  requestId: string | undefined,
  rule: ReplyRule,
): T & { request_id?: string } {
  if (requestId === undefined) return body;
  if (rule !== "broadcast_all") return { ...body, request_id: requestId };
  const { type, ...rest } = body;
  return { type, request_id: requestId, ...rest } as T & { request_id: string };
}

/**
 * Send a reply that is `peer`'s alone ("requester"): the message, the request's `request_id`, then
 * any extension `fields` (resume's `seq`), in that order.
 */
export function sendReply(
  peer: Peer,
  requestId: string | undefined,
  message: ServerMessage,
  fields?: Readonly<Record<string, unknown>>,
): void {
  const frame = { ...replyCopy(message, requestId, "requester"), ...fields };
  peer.send(JSON.stringify(frame), { type: message.type });
}
