/**
 * `@pheby/protocol`: the Pheby Protocol v1 contract. Zod schemas for every
 * message, their TypeScript types, the constants of the spec, and frame
 * decoding helpers. It performs no I/O.
 *
 * @packageDocumentation
 */

export { codePointLength, Hex32Id, jsonSchemaHints, OpaqueId, RequestId, Timestamp } from "./common.js";
export * from "./constants.js";
export * from "./decode.js";
export * from "./delta.js";
export * from "./messages/approvals.js";
export * from "./messages/attachments.js";
export * from "./messages/chat.js";
export * from "./messages/clarify.js";
export * from "./messages/conversations.js";
export * from "./messages/errors.js";
export * from "./messages/handshake.js";
export * from "./messages/models.js";
export * from "./messages/reasoning.js";
export * from "./messages/tools.js";
export * from "./messages/yolo.js";
export * from "./messages.js";
