import type { ClientMessageOf, ClientMessageType, ServerMessage } from "@pheby/protocol";
import type { Logger } from "pino";
import type { AgentBackend, AgentCapabilities } from "../agent/port.js";
import type { AttachmentStore } from "../attachments/store.js";
import type { Decisions } from "../decisions/decisions.js";
import { conversationNotFound } from "../errors.js";
import type { RunEngine } from "../runs/engine.js";
import type { Settings } from "../settings/settings.js";
import type { ConversationRow, Store } from "../store/store.js";
import type { Clock } from "../util/time.js";
import type { Connection, Hub } from "../ws/connection.js";
import type { HistoryRefresh } from "./history.js";

/** Services every handler can use. */
export interface ServerContext {
  store: Store;
  attachments: AttachmentStore;
  hub: Hub;
  runs: RunEngine;
  decisions: Decisions;
  settings: Settings;
  backend: AgentBackend;
  clock: Clock;
  log: Logger;
  /** Refreshes empty transcript mirrors from the agent's replay (see history.ts). */
  history: HistoryRefresh;
  /** Bound on the message text of one `conversation.history` page, in UTF-8 bytes. */
  historyPageBytes: number;
}

/** One decoded request from an authenticated connection. */
export interface Request<T extends ClientMessageType> {
  conn: Connection;
  msg: ClientMessageOf<T>;
}

/** A request handler. Throw a ProtocolError for a typed error; anything else becomes `internal_error`. */
export type Handler<T extends ClientMessageType> = (
  ctx: ServerContext,
  req: Request<T>,
) => void | Promise<void>;

/** Handlers by request type; one module per domain contributes a table. */
export type HandlerTable = { [T in ClientMessageType]?: Handler<T> };

/** Send the direct reply to a request, echoing its `request_id`. */
export function reply(req: Request<ClientMessageType>, msg: ServerMessage): void {
  const requestId = req.msg.request_id;
  req.conn.send(requestId === undefined ? msg : { ...msg, request_id: requestId });
}

/** A live conversation, or `conversation_not_found`. */
export function requireConversation(ctx: ServerContext, id: string): ConversationRow {
  const conv = ctx.store.getConversation(id);
  if (!conv) throw conversationNotFound();
  return conv;
}

/**
 * The backend's capabilities once it is up. A lazily started backend (ACP) reports optimistic
 * values until its agent has declared its own, so every capability check goes through here.
 * Throws when the agent cannot be started; callers fall back to what the server can do alone.
 */
export async function agentCapabilities(ctx: ServerContext): Promise<AgentCapabilities> {
  await ctx.backend.ensureReady?.();
  return ctx.backend.capabilities;
}
