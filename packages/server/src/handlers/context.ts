import type { ClientMessageOf, ClientMessageType, ServerMessage } from "@pheby/protocol";
import type { Logger } from "pino";
import type { AgentRegistry } from "../agents/registry.js";
import type { AttachmentStore } from "../attachments/store.js";
import type { Changes } from "../changes/service.js";
import type { HistoryRefresh } from "../conversations/history.js";
import type { Inbox } from "../conversations/inbox.js";
import type { Decisions } from "../decisions/decisions.js";
import type { Devices } from "../devices/devices.js";
import { conversationNotFound, ProtocolError } from "../errors.js";
import type { Origin, Outbox, OutboxEvent, Peer, ReplyRule } from "../outbox/outbox.js";
import type { PushService } from "../push/service.js";
import type { IdempotentRequests } from "../resume/idempotency.js";
import type { ResumeOutbox } from "../resume/outbox.js";
import type { AgentActivity } from "../runs/activity.js";
import type { RunEngine } from "../runs/engine.js";
import type { RunQueue } from "../runs/queue.js";
import type { Scheduler } from "../schedules/scheduler.js";
import type { Modes } from "../settings/modes.js";
import type { Settings } from "../settings/settings.js";
import type { ConversationRow, Store } from "../store/store.js";
import type { Clock } from "../util/time.js";

/** Services every handler can use. */
export interface ServerContext {
  store: Store;
  attachments: AttachmentStore;
  /** Where events go (the Fanout, or a wrapper around it). */
  outbox: Outbox;
  runs: RunEngine;
  /** The agent's latest plan and usage per conversation (`activity`). */
  activity: AgentActivity;
  /** Follow-ups waiting for the active run (`queue`). */
  queue: RunQueue;
  /** The resume log's side of `conversation.open` (`resume`; undefined when the server does not offer it). */
  resume: ResumeOutbox | undefined;
  /** Requests made idempotent by their `client_message_id` (`resume`). */
  sends: IdempotentRequests;
  /** Scheduled prompts (the `schedules` extension). */
  scheduler: Scheduler;
  decisions: Decisions;
  settings: Settings;
  /** The conversations' agent modes and slash commands (the `modes` extension). */
  modes: Modes;
  /** Paired devices (the `devices` extension). */
  devices: Devices;
  /** The agents and workspaces: every per-conversation backend call goes to the conversation's agent. */
  agents: AgentRegistry;
  clock: Clock;
  log: Logger;
  /** Refreshes empty transcript mirrors from the agent's replay (see conversations/history.ts). */
  history: HistoryRefresh;
  /** Bound on the message text of one `conversation.history` page, in UTF-8 bytes. */
  historyPageBytes: number;
  /** The `push` extension (subscriptions, presence, the VAPID key); the server always has one. */
  push: PushService;
  /** The `inbox` extension: the list's status, unread counts and archive state. */
  inbox: Inbox;
  /** The `changes` extension: each conversation's base commit, its changed files and their patches. */
  changes: Changes;
}

/** One decoded request of an authenticated peer. */
export interface Request<T extends ClientMessageType> {
  /** Who sent it: its features, its principal (and, as the run engine's origin, where a reply copy goes). */
  peer: Peer;
  msg: ClientMessageOf<T>;
}

/**
 * What a handler answers: which of the protocol's reply rules ({@link ReplyRule}) its reply follows,
 * and the reply. The connection layer sends it; no handler sends anything itself, and nothing but the
 * connection layer and the Fanout writes a `request_id`.
 */
export type Answer = RequesterAnswer | BroadcastAnswer | CoreAnswer | NoAnswer;

/**
 * "requester": `reply` goes to the requester alone, with its `request_id` (and the fields an
 * extension adds to a reply, e.g. resume's `seq`); then `replay`, events sent again to the requester
 * alone (a resumed conversation's missed events); then `broadcast`, if any, to every connection (the
 * requester too: it receives both, as the protocol's broadcast rules say); then `then`, in order.
 */
export interface RequesterAnswer {
  rule: "requester";
  reply: ServerMessage;
  replay?: readonly OutboxEvent[];
  broadcast?: OutboxEvent;
  /** Events that follow from the broadcast, published after it (`yolo.set`'s `mode.changed`). */
  then?: readonly OutboxEvent[];
}

/**
 * "broadcast" / "broadcast_all": the reply is `event`, which every connection gets; the connection
 * layer publishes it with the request as its `replyTo` (the requester's copy, or every copy, carries
 * the `request_id`).
 */
export interface BroadcastAnswer {
  rule: Exclude<ReplyRule, "requester">;
  event: OutboxEvent;
}

/**
 * "broadcast" / "broadcast_all", where the core publishes the reply event itself, at the moment its
 * order requires: `run.accepted` before its run's `message.start`, the cancel's `run.finished` when
 * the run ends, a `*.resolved` before the agent hears the answer, a `schedule.changed`. The handler
 * hands `origin` ({@link coreReply}) to the core, which passes it on as the event's `replyTo`.
 */
export interface CoreAnswer {
  rule: Exclude<ReplyRule, "requester">;
  origin: Origin;
}

/** No reply at all (`presence`: a hint about what the UI shows). */
export interface NoAnswer {
  rule: "none";
}

/** The answer of a request that has none. */
export const NO_ANSWER: NoAnswer = Object.freeze({ rule: "none" });

/**
 * An answer built when the connection layer sends it, not when the handler returns (a microtask
 * later, after which a live event could otherwise overtake a snapshot that does not account for it):
 * `conversation.open`'s history or resumed replay. It may throw a ProtocolError like a handler.
 */
export type Snapshot = () => Answer;

/** The answer of `req` that the core publishes, under `rule`: hand `origin` to the core, return the rest. */
export function coreReply(
  req: Request<ClientMessageType>,
  rule: Exclude<ReplyRule, "requester">,
): CoreAnswer {
  const { request_id } = req.msg;
  return {
    rule,
    origin: { peer: req.peer, ...(request_id === undefined ? {} : { requestId: request_id }), rule },
  };
}

/** A request handler. Throw a ProtocolError for a typed error; anything else becomes `internal_error`. */
export type Handler<T extends ClientMessageType> = (
  ctx: ServerContext,
  req: Request<T>,
) => Answer | Snapshot | Promise<Answer | Snapshot>;

/** Handlers by request type; one module per domain contributes a table. */
export type HandlerTable = { [T in ClientMessageType]?: Handler<T> };

/**
 * `unauthorized` when the requester's device was revoked since its request arrived. A revoke closes
 * the device's connections, but a request already waiting on something (a name resolution, a
 * history replay) would otherwise go on to store or start work under a device that no longer
 * exists: a handler calls this after every await, before it stores or acts.
 */
export function requireAuthorized(ctx: ServerContext, peer: Peer): void {
  const principal = peer.principal;
  if (principal?.kind === "device" && !ctx.devices.paired(principal.deviceId)) {
    throw new ProtocolError("unauthorized", "device revoked");
  }
}

/** A live conversation, or `conversation_not_found`. */
export function requireConversation(ctx: ServerContext, id: string): ConversationRow {
  const conv = ctx.store.getConversation(id);
  if (!conv) throw conversationNotFound();
  return conv;
}
