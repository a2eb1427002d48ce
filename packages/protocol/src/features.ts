/**
 * Which Pheby extension each extension message type and each extension field belongs to, in one
 * table, and the checks built on it. A connection that did not enable a feature must get none of its
 * messages and none of its fields (v1, byte for byte), and the server must act on none of them:
 * {@link decodeClientFrame} and {@link decodeServerFrame} enforce that from these tables.
 */
import {
  FEATURE_ACTIVITY,
  FEATURE_CHANGES,
  FEATURE_DELTA_APPEND,
  FEATURE_DEVICES,
  FEATURE_EXPIRY,
  FEATURE_INBOX,
  FEATURE_MODES,
  FEATURE_PUSH,
  FEATURE_QUEUE,
  FEATURE_RESUME,
  FEATURE_SCHEDULES,
  FEATURE_THOUGHTS,
  FEATURE_WORKSPACES,
  type Feature,
} from "./constants.js";
import type { ClientMessageType, ServerMessageType } from "./messages.js";

/** Any message type, in either direction. */
type MessageType = ClientMessageType | ServerMessageType;

/**
 * The message types that exist only with a feature, in both directions. A request of a feature the
 * connection did not enable is `unknown_type`, exactly like a type that does not exist; the server
 * sends an event of a feature only to connections that enabled it. Every other type is v1.
 */
export const EXTENSION_TYPES = {
  // push
  "push.subscribe": FEATURE_PUSH,
  "push.unsubscribe": FEATURE_PUSH,
  "push.list": FEATURE_PUSH,
  "push.test": FEATURE_PUSH,
  presence: FEATURE_PUSH,
  "push.subscribed": FEATURE_PUSH,
  "push.unsubscribed": FEATURE_PUSH,
  "push.subscriptions": FEATURE_PUSH,
  "push.tested": FEATURE_PUSH,
  // resume
  "conversation.resumed": FEATURE_RESUME,
  // queue
  "run.queued": FEATURE_QUEUE,
  "queue.changed": FEATURE_QUEUE,
  // schedules
  "schedule.list": FEATURE_SCHEDULES,
  "schedule.create": FEATURE_SCHEDULES,
  "schedule.update": FEATURE_SCHEDULES,
  "schedule.delete": FEATURE_SCHEDULES,
  "schedule.snapshot": FEATURE_SCHEDULES,
  "schedule.created": FEATURE_SCHEDULES,
  "schedule.changed": FEATURE_SCHEDULES,
  // devices
  "pair.create": FEATURE_DEVICES,
  "device.list": FEATURE_DEVICES,
  "device.revoke": FEATURE_DEVICES,
  "pair.created": FEATURE_DEVICES,
  "device.snapshot": FEATURE_DEVICES,
  "device.revoked": FEATURE_DEVICES,
  // activity
  "tool.get": FEATURE_ACTIVITY,
  "plan.updated": FEATURE_ACTIVITY,
  "usage.updated": FEATURE_ACTIVITY,
  // thoughts
  "thought.delta": FEATURE_THOUGHTS,
  "thought.complete": FEATURE_THOUGHTS,
  // modes
  "modes.list": FEATURE_MODES,
  "mode.set": FEATURE_MODES,
  "commands.list": FEATURE_MODES,
  "modes.snapshot": FEATURE_MODES,
  "mode.changed": FEATURE_MODES,
  "commands.snapshot": FEATURE_MODES,
  // inbox
  "conversation.read": FEATURE_INBOX,
  "conversation.archive": FEATURE_INBOX,
  "conversation.search": FEATURE_INBOX,
  "conversation.status": FEATURE_INBOX,
  "conversation.results": FEATURE_INBOX,
  // workspaces
  "agents.list": FEATURE_WORKSPACES,
  "workspaces.list": FEATURE_WORKSPACES,
  "agents.snapshot": FEATURE_WORKSPACES,
  "agents.changed": FEATURE_WORKSPACES,
  "workspaces.snapshot": FEATURE_WORKSPACES,
  // changes
  "changes.list": FEATURE_CHANGES,
  "changes.diff": FEATURE_CHANGES,
  "changes.snapshot": FEATURE_CHANGES,
  "changes.file": FEATURE_CHANGES,
  "changes.changed": FEATURE_CHANGES,
} as const satisfies { readonly [T in MessageType]?: Feature };

/** A message type that exists only with a feature. */
export type ExtensionMessageType = keyof typeof EXTENSION_TYPES;

// `resume` adds `seq` to every server message that has a `conversation_id` (conversationEvent).
const seq = { seq: FEATURE_RESUME } as const;
const expiry = { expires_at: FEATURE_EXPIRY } as const;
// `activity` adds a tool call's detail wherever a tool call is, and an approval's call and preview.
const toolDetail = {
  kind: FEATURE_ACTIVITY,
  title: FEATURE_ACTIVITY,
  locations: FEATURE_ACTIVITY,
  content: FEATURE_ACTIVITY,
} as const;
const approvalDetail = { tool_call_id: FEATURE_ACTIVITY, preview: FEATURE_ACTIVITY } as const;
// `inbox` adds a conversation's list state to each list entry.
const inboxFieldFeatures = {
  status: FEATURE_INBOX,
  pending: FEATURE_INBOX,
  unread: FEATURE_INBOX,
  preview: FEATURE_INBOX,
  archived: FEATURE_INBOX,
} as const;
// `workspaces` adds a conversation's agent, workspace and worktree branch to each list entry.
const workspacesFieldFeatures = {
  agent_id: FEATURE_WORKSPACES,
  workspace_id: FEATURE_WORKSPACES,
  branch: FEATURE_WORKSPACES,
} as const;
const agentId = { agent_id: FEATURE_WORKSPACES } as const;

/**
 * The fields that exist only with a feature, per message type, by path: `a` is a top-level field,
 * `a[].b` the field `b` of every object in the array `a`. A connection without the feature never
 * receives them, and a request's ones are dropped before the server sees it (tolerant reader: a v1
 * `chat.send` with `queue: true` is a plain v1 `chat.send`). Fields not listed are v1 (`hello.features`
 * and `ready.features` are the negotiation itself).
 */
export const EXTENSION_FIELDS = {
  // client → server
  hello: { pairing_code: FEATURE_DEVICES, device_name: FEATURE_DEVICES },
  "conversation.create": {
    client_message_id: FEATURE_RESUME,
    agent_id: FEATURE_WORKSPACES,
    workspace_id: FEATURE_WORKSPACES,
    worktree: FEATURE_WORKSPACES,
  },
  "conversation.open": { since_seq: FEATURE_RESUME },
  "conversation.list": {
    archived: FEATURE_INBOX,
    agent_id: FEATURE_WORKSPACES,
    workspace_id: FEATURE_WORKSPACES,
  },
  "models.list": agentId,
  "models.current": agentId,
  "model.set": agentId,
  "reasoning.current": agentId,
  "reasoning.set": agentId,
  "chat.send": { client_message_id: FEATURE_RESUME, queue: FEATURE_QUEUE },
  // server → client
  ready: { push: FEATURE_PUSH, device: FEATURE_DEVICES },
  "conversation.snapshot": {
    "conversations[].status": FEATURE_INBOX,
    "conversations[].pending": FEATURE_INBOX,
    "conversations[].unread": FEATURE_INBOX,
    "conversations[].preview": FEATURE_INBOX,
    "conversations[].archived": FEATURE_INBOX,
    "conversations[].agent_id": FEATURE_WORKSPACES,
    "conversations[].workspace_id": FEATURE_WORKSPACES,
    "conversations[].branch": FEATURE_WORKSPACES,
  },
  "conversation.created": { ...seq, ...inboxFieldFeatures, ...workspacesFieldFeatures },
  "conversation.updated": { ...seq, ...inboxFieldFeatures, ...workspacesFieldFeatures },
  "conversation.history": {
    ...seq,
    resumed: FEATURE_RESUME,
    "messages[].client_message_id": FEATURE_RESUME,
    queue: FEATURE_QUEUE,
    "queue[].client_message_id": FEATURE_RESUME,
    "approvals[].expires_at": FEATURE_EXPIRY,
    "clarifications[].expires_at": FEATURE_EXPIRY,
    "tools[].kind": FEATURE_ACTIVITY,
    "tools[].title": FEATURE_ACTIVITY,
    "tools[].locations": FEATURE_ACTIVITY,
    "tools[].content": FEATURE_ACTIVITY,
    "approvals[].tool_call_id": FEATURE_ACTIVITY,
    "approvals[].preview": FEATURE_ACTIVITY,
    plan: FEATURE_ACTIVITY,
    usage: FEATURE_ACTIVITY,
    thoughts: FEATURE_THOUGHTS,
    mode_id: FEATURE_MODES,
  },
  "conversation.renamed": seq,
  "conversation.deleted": seq,
  "run.accepted": seq,
  "message.start": seq,
  "message.delta": { offset: FEATURE_DELTA_APPEND, ...seq },
  "message.complete": seq,
  "run.finished": seq,
  "tool.event": { ...toolDetail, ...seq },
  "approval.request": { ...expiry, ...approvalDetail, ...seq },
  "approval.resolved": { conversation_id: FEATURE_RESUME, ...seq },
  "clarify.request": { ...expiry, ...seq },
  "clarify.resolved": { conversation_id: FEATURE_RESUME, ...seq },
  "yolo.snapshot": seq,
  "yolo.changed": seq,
  "attachment.added": seq,
  "model.current": seq,
  "model.changed": { ...seq, ...agentId },
  "reasoning.snapshot": seq,
  "reasoning.changed": { ...seq, ...agentId },
  "run.queued": seq,
  "queue.changed": { ...seq, "queued[].client_message_id": FEATURE_RESUME },
  "plan.updated": seq,
  "usage.updated": seq,
  "thought.delta": seq,
  "thought.complete": seq,
  "modes.snapshot": seq,
  "mode.changed": seq,
  "commands.snapshot": seq,
  "changes.snapshot": seq,
  "changes.file": seq,
  "changes.changed": seq,
} as const satisfies { readonly [T in MessageType]?: Readonly<Record<string, Feature>> };

/** The feature a message type belongs to, or undefined for a v1 type (and for unknown ones). */
export function featureOfType(type: string): Feature | undefined {
  return Object.hasOwn(EXTENSION_TYPES, type) ? EXTENSION_TYPES[type as ExtensionMessageType] : undefined;
}

/** The extension fields of a message type, as [path, feature] pairs (none for most v1 types). */
export function extensionFieldsOf(type: string): [path: string, feature: Feature][] {
  if (!Object.hasOwn(EXTENSION_FIELDS, type)) return [];
  return Object.entries(EXTENSION_FIELDS[type as keyof typeof EXTENSION_FIELDS]) as [string, Feature][];
}

type JsonRecord = Record<string, unknown>;
const isRecord = (v: unknown): v is JsonRecord => typeof v === "object" && v !== null && !Array.isArray(v);

/** Calls `visit(owner, key)` for each object that could hold the field at `path` (`a[].b` walks arrays). */
function forEachHolder(value: unknown, path: string, visit: (owner: JsonRecord, key: string) => void): void {
  if (!isRecord(value)) return;
  const dot = path.indexOf(".");
  if (dot === -1) {
    visit(value, path);
    return;
  }
  const head = path.slice(0, dot);
  const rest = path.slice(dot + 1);
  if (head.endsWith("[]")) {
    const items = value[head.slice(0, -2)];
    if (Array.isArray(items)) for (const item of items) forEachHolder(item, rest, visit);
  } else {
    forEachHolder(value[head], rest, visit);
  }
}

/** True when the field at `path` is present (even as `null`) anywhere in `value`. */
function hasField(value: unknown, path: string): boolean {
  let found = false;
  forEachHolder(value, path, (owner, key) => {
    if (owner[key] !== undefined) found = true;
  });
  return found;
}

/**
 * Remove, in place, every extension field of a feature not in `enabled` from a parsed JSON frame of
 * type `type`. Used on inbound requests before validation, so a field of a feature the connection did
 * not enable is ignored like any unknown field.
 */
export function stripDisabledFields(frame: JsonRecord, type: string, enabled: ReadonlySet<string>): void {
  for (const [path, feature] of extensionFieldsOf(type)) {
    if (!enabled.has(feature)) forEachHolder(frame, path, (owner, key) => delete owner[key]);
  }
}

/** Where a message uses a feature: its type, or one of its fields. */
export interface FeatureUse {
  feature: Feature;
  /** The extension field path (`seq`, `messages[].client_message_id`), or undefined when the type itself is the extension's. */
  field?: string;
}

/**
 * Every use of an extension in one message (a parsed frame, or a typed message): its type when the
 * type is an extension's, and each extension field present (even as `null`). Empty for a v1 message.
 *
 * @example
 * ```ts
 * extensionsUse({ type: "message.delta", conversation_id: "c", message_id: "m", offset: 3, text: "lo", ts })
 * // → [{ feature: "delta.append", field: "offset" }]
 * ```
 */
export function extensionsUse(message: { type: string }): FeatureUse[] {
  const uses: FeatureUse[] = [];
  const feature = featureOfType(message.type);
  if (feature) uses.push({ feature });
  for (const [field, fieldFeature] of extensionFieldsOf(message.type)) {
    if (hasField(message, field)) uses.push({ feature: fieldFeature, field });
  }
  return uses;
}

/** The distinct features one message uses ({@link extensionsUse}); `[]` for a v1 message. */
export function extensionsUsed(message: { type: string }): Feature[] {
  return [...new Set(extensionsUse(message).map((u) => u.feature))];
}

/**
 * Why a message may not go to (or come from) a connection with `features` enabled: the first use of a
 * feature not enabled, as the decode error a strict reader reports (`unknown_type` for the type,
 * `bad_request` for a field), or undefined when every feature it uses is enabled. A message of a v1
 * type with no extension field passes whatever is enabled.
 *
 * @example
 * ```ts
 * // A server test: a v1 connection must get v1.
 * expect(checkFeatures(frame, [])).toBeUndefined();
 * ```
 */
export function checkFeatures(
  message: { type: string },
  features: Iterable<string>,
): { code: "unknown_type" | "bad_request"; message: string } | undefined {
  const enabled = features instanceof Set ? (features as ReadonlySet<string>) : new Set(features);
  for (const use of extensionsUse(message)) {
    if (enabled.has(use.feature)) continue;
    return use.field === undefined
      ? {
          code: "unknown_type",
          message: `${message.type} belongs to the ${use.feature} feature, which this connection did not enable`,
        }
      : {
          code: "bad_request",
          message: `${use.field} belongs to the ${use.feature} feature, which this connection did not enable`,
        };
  }
  return undefined;
}
