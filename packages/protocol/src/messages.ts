import { z } from "zod/v3";
import { ApprovalRequest, ApprovalResolved, ApprovalRespond } from "./messages/approvals.js";
import { AttachmentAdded } from "./messages/attachments.js";
import {
  ChatSend,
  MessageComplete,
  MessageDelta,
  MessageStart,
  RunAccepted,
  RunCancel,
  RunFinished,
} from "./messages/chat.js";
import { ClarifyRequest, ClarifyResolved, ClarifyRespond } from "./messages/clarify.js";
import {
  ConversationCreate,
  ConversationCreated,
  ConversationDelete,
  ConversationDeleted,
  ConversationHistory,
  ConversationList,
  ConversationOpen,
  ConversationRename,
  ConversationRenamed,
  ConversationSnapshot,
  ConversationUpdated,
} from "./messages/conversations.js";
import { ErrorMessage } from "./messages/errors.js";
import { Hello, Ping, Pong, Ready } from "./messages/handshake.js";
import {
  ModelChanged,
  ModelCurrent,
  ModelSet,
  ModelsCurrent,
  ModelsList,
  ModelsSnapshot,
} from "./messages/models.js";
import { ReasoningChanged, ReasoningCurrent, ReasoningSet, ReasoningSnapshot } from "./messages/reasoning.js";
import { ToolEvent } from "./messages/tools.js";
import { YoloChanged, YoloCurrent, YoloSet, YoloSnapshot } from "./messages/yolo.js";

/** Every client→server message schema, keyed by its `type`. */
export const clientMessageSchemas = {
  hello: Hello,
  ping: Ping,
  "conversation.list": ConversationList,
  "conversation.create": ConversationCreate,
  "conversation.open": ConversationOpen,
  "conversation.rename": ConversationRename,
  "conversation.delete": ConversationDelete,
  "chat.send": ChatSend,
  "run.cancel": RunCancel,
  "approval.respond": ApprovalRespond,
  "clarify.respond": ClarifyRespond,
  "yolo.current": YoloCurrent,
  "yolo.set": YoloSet,
  "models.list": ModelsList,
  "models.current": ModelsCurrent,
  "model.set": ModelSet,
  "reasoning.current": ReasoningCurrent,
  "reasoning.set": ReasoningSet,
} as const;

/** Every server→client message schema, keyed by its `type`. */
export const serverMessageSchemas = {
  ready: Ready,
  pong: Pong,
  error: ErrorMessage,
  "conversation.snapshot": ConversationSnapshot,
  "conversation.created": ConversationCreated,
  "conversation.updated": ConversationUpdated,
  "conversation.history": ConversationHistory,
  "conversation.renamed": ConversationRenamed,
  "conversation.deleted": ConversationDeleted,
  "run.accepted": RunAccepted,
  "message.start": MessageStart,
  "message.delta": MessageDelta,
  "message.complete": MessageComplete,
  "run.finished": RunFinished,
  "tool.event": ToolEvent,
  "approval.request": ApprovalRequest,
  "approval.resolved": ApprovalResolved,
  "clarify.request": ClarifyRequest,
  "clarify.resolved": ClarifyResolved,
  "yolo.snapshot": YoloSnapshot,
  "yolo.changed": YoloChanged,
  "attachment.added": AttachmentAdded,
  "models.snapshot": ModelsSnapshot,
  "model.current": ModelCurrent,
  "model.changed": ModelChanged,
  "reasoning.snapshot": ReasoningSnapshot,
  "reasoning.changed": ReasoningChanged,
} as const;

/** Client→server message types, as constants. */
export type ClientMessageType = keyof typeof clientMessageSchemas;
/** Server→client message types, as constants. */
export type ServerMessageType = keyof typeof serverMessageSchemas;

/** The 18 client→server `type` values. */
export const CLIENT_MESSAGE_TYPES = Object.keys(clientMessageSchemas) as ClientMessageType[];
/** The 27 server→client `type` values. */
export const SERVER_MESSAGE_TYPES = Object.keys(serverMessageSchemas) as ServerMessageType[];

type Values<T> = T[keyof T];
type Tuple<T> = [T, T, ...T[]];

/** Any client→server message, discriminated on `type`. */
export const ClientMessage = z
  .discriminatedUnion(
    "type",
    Object.values(clientMessageSchemas) as unknown as Tuple<Values<typeof clientMessageSchemas>>,
  )
  .describe("Any client-to-server message");
/** Any server→client message, discriminated on `type`. */
export const ServerMessage = z
  .discriminatedUnion(
    "type",
    Object.values(serverMessageSchemas) as unknown as Tuple<Values<typeof serverMessageSchemas>>,
  )
  .describe("Any server-to-client message");

/** A client→server message (parsed form). */
export type ClientMessage = z.infer<typeof ClientMessage>;
/** A server→client message (parsed form). */
export type ServerMessage = z.infer<typeof ServerMessage>;

/** The client message whose `type` is `T`. */
export type ClientMessageOf<T extends ClientMessageType> = z.infer<(typeof clientMessageSchemas)[T]>;
/** The server message whose `type` is `T`. */
export type ServerMessageOf<T extends ServerMessageType> = z.infer<(typeof serverMessageSchemas)[T]>;
/** A client message as a caller writes it: `request_id` and optional fields may be left out. */
export type ClientMessageInput<T extends ClientMessageType> = z.input<(typeof clientMessageSchemas)[T]>;

/**
 * The direct reply type of each request. `error` is always possible as well.
 * `run.cancel` is answered by the run's single `run.finished` (broadcast, and
 * carrying the canceller's `request_id`).
 */
export const REPLY_TYPES = {
  hello: "ready",
  ping: "pong",
  "conversation.list": "conversation.snapshot",
  "conversation.create": "conversation.created",
  "conversation.open": "conversation.history",
  "conversation.rename": "conversation.renamed",
  "conversation.delete": "conversation.deleted",
  "chat.send": "run.accepted",
  "run.cancel": "run.finished",
  "approval.respond": "approval.resolved",
  "clarify.respond": "clarify.resolved",
  "yolo.current": "yolo.snapshot",
  "yolo.set": "yolo.changed",
  "models.list": "models.snapshot",
  "models.current": "model.current",
  "model.set": "model.changed",
  "reasoning.current": "reasoning.snapshot",
  "reasoning.set": "reasoning.changed",
} as const satisfies Record<ClientMessageType, ServerMessageType>;

/** The reply message type of request type `T`. */
export type ReplyOf<T extends ClientMessageType> = ServerMessageOf<(typeof REPLY_TYPES)[T]>;
