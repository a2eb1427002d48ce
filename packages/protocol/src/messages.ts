import { z } from "zod/v3";
import { checkFieldRules, fieldRulesOf } from "./common.js";
import { LIMITS } from "./constants.js";
import { PlanUpdated, ToolGet, UsageUpdated } from "./messages/activity.js";
import {
  ApprovalAnswer,
  ApprovalAnswerResponse,
  ApprovalRequest,
  ApprovalResolved,
  ApprovalRespond,
} from "./messages/approvals.js";
import { AttachmentAdded, AttachmentDescriptor, UploadResponse } from "./messages/attachments.js";
import {
  ChangesChanged,
  ChangesDiff,
  ChangesFile,
  ChangesList,
  ChangesSnapshot,
} from "./messages/changes.js";
import {
  ChatSend,
  MessageComplete,
  MessageDelta,
  MessageStart,
  RunAccepted,
  RunCancel,
  RunFinished,
} from "./messages/chat.js";
import {
  ClarifyAnswer,
  ClarifyAnswerResponse,
  ClarifyRequest,
  ClarifyResolved,
  ClarifyRespond,
} from "./messages/clarify.js";
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
import {
  DeviceList,
  DeviceRevoke,
  DeviceRevoked,
  DeviceSnapshot,
  PairCreate,
  PairCreated,
} from "./messages/devices.js";
import { ErrorBody, ErrorMessage } from "./messages/errors.js";
import { Hello, Ping, Pong, Ready } from "./messages/handshake.js";
import {
  ConversationArchive,
  ConversationRead,
  ConversationResults,
  ConversationSearch,
  ConversationStatus,
} from "./messages/inbox.js";
import {
  ModelChanged,
  ModelCurrent,
  ModelSet,
  ModelsCurrent,
  ModelsList,
  ModelsSnapshot,
} from "./messages/models.js";
import {
  CommandsList,
  CommandsSnapshot,
  ModeChanged,
  ModeSet,
  ModesList,
  ModesSnapshot,
} from "./messages/modes.js";
import {
  Presence,
  PushList,
  PushSubscribe,
  PushSubscribed,
  PushSubscriptions,
  PushTest,
  PushTested,
  PushUnsubscribe,
  PushUnsubscribed,
  pushPayloadSchemas,
} from "./messages/push.js";
import { QueueChanged, RunQueued } from "./messages/queue.js";
import { ReasoningChanged, ReasoningCurrent, ReasoningSet, ReasoningSnapshot } from "./messages/reasoning.js";
import { ConversationResumed } from "./messages/resume.js";
import {
  ScheduleChanged,
  ScheduleCreate,
  ScheduleCreated,
  ScheduleDelete,
  ScheduleList,
  ScheduleSnapshot,
  ScheduleUpdate,
} from "./messages/schedules.js";
import { ThoughtComplete, ThoughtDelta } from "./messages/thoughts.js";
import { ToolEvent } from "./messages/tools.js";
import {
  AgentsChanged,
  AgentsList,
  AgentsSnapshot,
  WorkspacesList,
  WorkspacesSnapshot,
} from "./messages/workspaces.js";
import { YoloChanged, YoloCurrent, YoloSet, YoloSnapshot } from "./messages/yolo.js";

/**
 * Every client→server message schema, keyed by its `type`: the 18 of v1, then the extensions' (see
 * {@link EXTENSION_TYPES} for which feature each needs).
 */
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
  // push
  "push.subscribe": PushSubscribe,
  "push.unsubscribe": PushUnsubscribe,
  "push.list": PushList,
  "push.test": PushTest,
  presence: Presence,
  // schedules
  "schedule.list": ScheduleList,
  "schedule.create": ScheduleCreate,
  "schedule.update": ScheduleUpdate,
  "schedule.delete": ScheduleDelete,
  // devices
  "pair.create": PairCreate,
  "device.list": DeviceList,
  "device.revoke": DeviceRevoke,
  // activity
  "tool.get": ToolGet,
  // modes
  "modes.list": ModesList,
  "mode.set": ModeSet,
  "commands.list": CommandsList,
  // inbox
  "conversation.read": ConversationRead,
  "conversation.archive": ConversationArchive,
  "conversation.search": ConversationSearch,
  // workspaces
  "agents.list": AgentsList,
  "workspaces.list": WorkspacesList,
  // changes
  "changes.list": ChangesList,
  "changes.diff": ChangesDiff,
} as const;

/**
 * Every server→client message schema, keyed by its `type`: the 27 of v1, then the extensions' (see
 * {@link EXTENSION_TYPES}).
 */
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
  // push
  "push.subscribed": PushSubscribed,
  "push.unsubscribed": PushUnsubscribed,
  "push.subscriptions": PushSubscriptions,
  "push.tested": PushTested,
  // resume
  "conversation.resumed": ConversationResumed,
  // queue
  "run.queued": RunQueued,
  "queue.changed": QueueChanged,
  // schedules
  "schedule.snapshot": ScheduleSnapshot,
  "schedule.created": ScheduleCreated,
  "schedule.changed": ScheduleChanged,
  // devices
  "pair.created": PairCreated,
  "device.snapshot": DeviceSnapshot,
  "device.revoked": DeviceRevoked,
  // activity
  "plan.updated": PlanUpdated,
  "usage.updated": UsageUpdated,
  // thoughts
  "thought.delta": ThoughtDelta,
  "thought.complete": ThoughtComplete,
  // modes
  "modes.snapshot": ModesSnapshot,
  "mode.changed": ModeChanged,
  "commands.snapshot": CommandsSnapshot,
  // inbox
  "conversation.status": ConversationStatus,
  "conversation.results": ConversationResults,
  // workspaces
  "agents.snapshot": AgentsSnapshot,
  "agents.changed": AgentsChanged,
  "workspaces.snapshot": WorkspacesSnapshot,
  // changes
  "changes.snapshot": ChangesSnapshot,
  "changes.file": ChangesFile,
  "changes.changed": ChangesChanged,
} as const;

/** Client→server message types, as constants. */
export type ClientMessageType = keyof typeof clientMessageSchemas;
/** Server→client message types, as constants. */
export type ServerMessageType = keyof typeof serverMessageSchemas;

/** Every client→server `type` value (18 of v1, then the extensions'). */
export const CLIENT_MESSAGE_TYPES = Object.keys(clientMessageSchemas) as ClientMessageType[];
/** Every server→client `type` value (27 of v1, then the extensions'). */
export const SERVER_MESSAGE_TYPES = Object.keys(serverMessageSchemas) as ServerMessageType[];

type Values<T> = T[keyof T];

/**
 * A union of object schemas discriminated on `key`, keeping each member's cross-field rules
 * ({@link withFieldRules}): the union itself takes the plain objects, and checks the rules of the
 * member it matched on top.
 */
function rulesUnion<K extends string, S extends Record<string, z.ZodTypeAny>>(
  key: K,
  schemas: S,
): z.ZodType<z.output<Values<S>>, z.ZodTypeDef, z.input<Values<S>>> {
  const objects = Object.values(schemas).map((s) => (s instanceof z.ZodEffects ? s.innerType() : s));
  type Option = z.ZodDiscriminatedUnionOption<K>;
  const union = z.discriminatedUnion(key, objects as [Option, ...Option[]]);
  return union.superRefine((value, ctx) => {
    const rules = fieldRulesOf(schemas[(value as Record<K, string>)[key]]!);
    if (rules) checkFieldRules(value as Record<string, unknown>, rules, ctx);
  });
}

/** Any client→server message, discriminated on `type`. */
export const ClientMessage = rulesUnion("type", clientMessageSchemas).describe(
  "Any client-to-server message",
);
/** Any server→client message, discriminated on `type`. */
export const ServerMessage = rulesUnion("type", serverMessageSchemas).describe(
  "Any server-to-client message",
);

/**
 * `push`: the JSON object inside an encrypted push message (RFC 8291), discriminated on `kind`, at
 * most {@link LIMITS}.pushPayloadBytes of UTF-8 JSON. Decode it in the app with the same rules as a
 * server frame: an unknown `kind` is a newer server's.
 */
export const PushPayload = rulesUnion("kind", pushPayloadSchemas)
  .superRefine((payload, ctx) => {
    // Bytes, not characters: the push message holds 3,993 bytes of plaintext (RFC 8291).
    const bytes = new TextEncoder().encode(JSON.stringify(payload)).byteLength;
    if (bytes > LIMITS.pushPayloadBytes) {
      ctx.addIssue({
        code: z.ZodIssueCode.custom,
        message: `must be at most ${LIMITS.pushPayloadBytes} bytes of JSON`,
      });
    }
  })
  .describe("The JSON object inside an encrypted push message");
/** A push payload (parsed form). */
export type PushPayload = z.infer<typeof PushPayload>;

/**
 * HTTP bodies, keyed by name (the definition names of `schema/http.json`): the attachment routes'
 * (`UploadResponse`, `AttachmentDescriptor`), every route's `ErrorBody`, and, with `push`, the
 * notification-answer routes' (`POST /approvals/{approval_id}`, `POST /clarify/{clarify_id}`) and the
 * Web Push payload (`PushPayload`, which travels as an encrypted HTTP body).
 */
export const httpBodySchemas = {
  AttachmentDescriptor,
  UploadResponse,
  ErrorBody,
  ApprovalAnswer,
  ApprovalAnswerResponse,
  ClarifyAnswer,
  ClarifyAnswerResponse,
  PushPayload,
} as const;

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
 * carrying the canceller's `request_id`). `presence` has no reply. Two requests
 * may get another reply when they use an extension field: see
 * {@link ALTERNATIVE_REPLY_TYPES}.
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
  "push.subscribe": "push.subscribed",
  "push.unsubscribe": "push.unsubscribed",
  "push.list": "push.subscriptions",
  "push.test": "push.tested",
  "schedule.list": "schedule.snapshot",
  "schedule.create": "schedule.created",
  "schedule.update": "schedule.changed",
  "schedule.delete": "schedule.changed",
  "pair.create": "pair.created",
  "device.list": "device.snapshot",
  "device.revoke": "device.revoked",
  "tool.get": "tool.event",
  "modes.list": "modes.snapshot",
  "mode.set": "mode.changed",
  "commands.list": "commands.snapshot",
  "conversation.read": "conversation.status",
  "conversation.archive": "conversation.status",
  "conversation.search": "conversation.results",
  "agents.list": "agents.snapshot",
  "workspaces.list": "workspaces.snapshot",
  "changes.list": "changes.snapshot",
  "changes.diff": "changes.file",
} as const satisfies Record<Exclude<ClientMessageType, "presence">, ServerMessageType>;

/** A client message type that gets a direct reply (all but `presence`). */
export type RequestType = keyof typeof REPLY_TYPES;

/**
 * The other direct reply a request may get, only on a connection with the feature and only when the
 * request uses it: `chat.send` with `queue: true` while a run is active gets `run.queued` (`queue`);
 * `conversation.open` with `since_seq` gets `conversation.resumed` when the server can replay
 * (`resume`), else the usual `conversation.history` (with `resumed: false`).
 */
export const ALTERNATIVE_REPLY_TYPES = {
  "chat.send": "run.queued",
  "conversation.open": "conversation.resumed",
} as const satisfies { readonly [T in RequestType]?: ServerMessageType };

/**
 * The three ways a reply leaves the server (docs/protocol.md, "Broadcast rules"):
 *
 * - `requester`: the reply goes to the requester only, with its `request_id`. Some requests also cause
 *   a separate event for everyone (`conversation.rename` → `conversation.renamed`, `yolo.set` →
 *   `yolo.changed`): a second frame without `request_id`, which the requester receives too.
 * - `broadcast`: the reply is an event every (eligible) connection gets once; only the requester's
 *   copy carries its `request_id` (`run.accepted`).
 * - `broadcast_all`: the reply is an event every connection gets once, and every copy carries the
 *   requester's `request_id`, as the spec says of `approval.resolved` and `clarify.resolved`.
 */
export const REPLY_RULE_NAMES = ["requester", "broadcast", "broadcast_all"] as const;
/** One of the three reply rules ({@link REPLY_RULE_NAMES}). */
export type ReplyRule = (typeof REPLY_RULE_NAMES)[number];

/**
 * Which reply rule the {@link REPLY_TYPES} reply of each request follows. An extension's broadcast
 * reaches only the connections that enabled its feature (`schedule.changed`, `device.revoked`), and
 * `inbox`'s `conversation.status` is per reader: the reply to `conversation.read` reaches only the
 * requesting reader's `inbox` connections (no other reader's state changed), and every copy of the
 * reply to `conversation.archive` carries its receiver's own `unread`. The
 * `run.finished` answering a `run.cancel` of a *queued* run goes to the canceller only: nobody else
 * saw that run start.
 */
export const REPLY_RULES = {
  hello: "requester",
  ping: "requester",
  "conversation.list": "requester",
  "conversation.create": "requester",
  "conversation.open": "requester",
  "conversation.rename": "requester",
  "conversation.delete": "requester",
  "chat.send": "broadcast",
  "run.cancel": "broadcast_all",
  "approval.respond": "broadcast_all",
  "clarify.respond": "broadcast_all",
  "yolo.current": "requester",
  "yolo.set": "requester",
  "models.list": "requester",
  "models.current": "requester",
  "model.set": "requester",
  "reasoning.current": "requester",
  "reasoning.set": "requester",
  "push.subscribe": "requester",
  "push.unsubscribe": "requester",
  "push.list": "requester",
  "push.test": "requester",
  "schedule.list": "requester",
  "schedule.create": "requester",
  "schedule.update": "broadcast",
  "schedule.delete": "broadcast",
  "pair.create": "requester",
  "device.list": "requester",
  "device.revoke": "broadcast",
  "tool.get": "requester",
  "modes.list": "requester",
  "mode.set": "broadcast",
  "commands.list": "requester",
  // To the reader's own inbox connections: the other readers' unread did not change.
  "conversation.read": "broadcast",
  "conversation.archive": "broadcast",
  "conversation.search": "requester",
  "agents.list": "requester",
  "workspaces.list": "requester",
  "changes.list": "requester",
  "changes.diff": "requester",
} as const satisfies Record<RequestType, ReplyRule>;

/** Which reply rule each {@link ALTERNATIVE_REPLY_TYPES} reply follows. */
export const ALTERNATIVE_REPLY_RULES = {
  "chat.send": "requester",
  "conversation.open": "requester",
} as const satisfies Record<keyof typeof ALTERNATIVE_REPLY_TYPES, ReplyRule>;

/** The rule the reply of type `reply` to a request of type `request` follows, or undefined when it is not one of its replies. */
export function replyRuleOf(request: ClientMessageType, reply: string): ReplyRule | undefined {
  if (!Object.hasOwn(REPLY_TYPES, request)) return undefined;
  const type = request as RequestType;
  if (REPLY_TYPES[type] === reply) return REPLY_RULES[type];
  if (Object.hasOwn(ALTERNATIVE_REPLY_TYPES, type)) {
    const alt = type as keyof typeof ALTERNATIVE_REPLY_TYPES;
    if (ALTERNATIVE_REPLY_TYPES[alt] === reply) return ALTERNATIVE_REPLY_RULES[alt];
  }
  return undefined;
}

/** Every client message type that gets no reply on success (only an `error` on failure). */
export const NO_REPLY_TYPES = ["presence"] as const satisfies readonly Exclude<
  ClientMessageType,
  RequestType
>[];

/** The reply message type of request type `T` (its {@link REPLY_TYPES} one). */
export type ReplyOf<T extends RequestType> = ServerMessageOf<(typeof REPLY_TYPES)[T]>;

/** True when a server message of type `reply` is a direct reply to a request of type `request`. */
export function isReplyType(request: ClientMessageType, reply: string): boolean {
  if (!Object.hasOwn(REPLY_TYPES, request)) return false;
  const alternative = (ALTERNATIVE_REPLY_TYPES as Partial<Record<ClientMessageType, string>>)[request];
  return REPLY_TYPES[request as RequestType] === reply || alternative === reply;
}
