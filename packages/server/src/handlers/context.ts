import type { ClientMessageOf, ClientMessageType, ServerMessage } from "@pheby/protocol";
import type { Logger } from "pino";
import type { AgentBackend } from "../agent/port.js";
import type { AttachmentStore } from "../attachments/store.js";
import type { HistoryRefresh } from "../conversations/history.js";
import type { Decisions } from "../decisions/decisions.js";
import type { Devices } from "../devices/devices.js";
import { conversationNotFound, ProtocolError } from "../errors.js";
import type { Outbox, OutboxEvent, Peer } from "../outbox/outbox.js";
import type { PushService } from "../push/service.js";
import type { IdempotentRequests } from "../resume/idempotency.js";
import type { ResumeOutbox } from "../resume/outbox.js";
import type { RunEngine } from "../runs/engine.js";
import type { RunQueue } from "../runs/queue.js";
import type { Scheduler } from "../schedules/scheduler.js";
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
  /** Follow-ups waiting for the active run (`queue`). */
  queue: RunQueue;
  /** The replay log's side of `conversation.open` and replies (`resume`; undefined when the server does not offer it). */
  replay: ResumeOutbox | undefined;
  /** Requests made idempotent by their `client_message_id` (`resume`). */
  sends: IdempotentRequests;
  /** Scheduled prompts (the `schedules` extension). */
  scheduler: Scheduler;
  decisions: Decisions;
  settings: Settings;
  /** Paired devices (the `devices` extension). */
  devices: Devices;
  backend: AgentBackend;
  clock: Clock;
  log: Logger;
  /** Refreshes empty transcript mirrors from the agent's replay (see conversations/history.ts). */
  history: HistoryRefresh;
  /** Bound on the message text of one `conversation.history` page, in UTF-8 bytes. */
  historyPageBytes: number;
  /** The `push` extension (subscriptions, presence, the VAPID key); the server always has one. */
  push: PushService;
}

/** One decoded request of an authenticated peer. */
export interface Request<T extends ClientMessageType> {
  /** Who sent it: its features, its principal (and, as the run engine's origin, where a reply copy goes). */
  peer: Peer;
  msg: ClientMessageOf<T>;
}

/**
 * What a handler answers. The session sends `reply` to the requester with its
 * `request_id`, then publishes `broadcast` to the outbox, in that order.
 * Events a handler causes through the core (run.accepted, *.resolved) are
 * published by the core itself.
 */
export interface Outcome {
  reply?: ServerMessage;
  broadcast?: OutboxEvent;
}

/** The outcome of a request whose reply the core publishes itself (`run.accepted`, `*.resolved`, `run.finished`). */
export const PUBLISHED_BY_CORE: Outcome = Object.freeze({});

/** A request handler. Throw a ProtocolError for a typed error; anything else becomes `internal_error`. */
export type Handler<T extends ClientMessageType> = (
  ctx: ServerContext,
  req: Request<T>,
) => Outcome | Promise<Outcome>;

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
