/**
 * `@pheby/protocol`: the Pheby Protocol v1 contract and its negotiated
 * extensions. Zod schemas for every message, their TypeScript types, the
 * constants of the spec, the feature table, and frame decoding helpers. It
 * performs no I/O.
 *
 * @packageDocumentation
 */

export {
  checkFieldRules,
  codePointLength,
  type FieldRule,
  fieldRulesOf,
  Hex32Id,
  jsonSchemaHints,
  OpaqueId,
  RequestId,
  Seq,
  Timestamp,
  utf8ByteLength,
} from "./common.js";
export * from "./constants.js";
export * from "./decode.js";
export * from "./delta.js";
export * from "./features.js";
export * from "./messages/activity.js";
export * from "./messages/approvals.js";
export * from "./messages/attachments.js";
export * from "./messages/changes.js";
export * from "./messages/chat.js";
export * from "./messages/clarify.js";
export * from "./messages/conversations.js";
export * from "./messages/devices.js";
export * from "./messages/errors.js";
export * from "./messages/handshake.js";
export * from "./messages/inbox.js";
export * from "./messages/models.js";
export * from "./messages/modes.js";
export * from "./messages/push.js";
export * from "./messages/queue.js";
export * from "./messages/reasoning.js";
export * from "./messages/resume.js";
export * from "./messages/schedules.js";
export * from "./messages/thoughts.js";
export * from "./messages/tools.js";
export * from "./messages/workspaces.js";
export * from "./messages/yolo.js";
export * from "./messages.js";
