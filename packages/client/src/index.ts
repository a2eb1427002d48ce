/**
 * `@pheby/client`: a typed Pheby Protocol v1 client for Node (with `ws`) and
 * browsers. Requests resolve with their typed reply, events are typed by
 * `type`, `chat()` iterates over one run, drops are repaired with backoff,
 * and files stream both ways. The same design, option and state names as
 * the Kotlin client.
 *
 * @packageDocumentation
 */
export { type BackoffOptions, backoffDelay } from "./backoff.js";
export {
  type Agent,
  type ChangedFile,
  type ChangedFilePatch,
  type ChangesSnapshot,
  type ChatOptions,
  type ConnectionState,
  type ConversationEntry,
  type ConversationStatus,
  type CreateConversationOptions,
  type FrameEvents,
  type InboxStatus,
  type InvalidFrame,
  type ListConversationsOptions,
  PhebyClient,
  type PhebyClientOptions,
  type PushSubscriptionKeys,
  type ReplyTo,
  type ResyncResult,
  type SearchHit,
  type SettingScopeOptions,
  type Workspace,
} from "./client.js";
export { PhebyError, type PhebyErrorCode } from "./errors.js";
export { DEFAULT_FEATURES } from "./features.js";
export {
  type DownloadResult,
  downloadAttachment,
  type FileClientOptions,
  httpBase,
  type ProgressCallback,
  type UploadSource,
  uploadAttachment,
} from "./files.js";
export {
  type ApprovalAnswerResult,
  answerApproval,
  answerClarification,
  type ClarifyAnswerResult,
  type HttpAnswerOptions,
} from "./http-answers.js";
export {
  type PairDeviceOptions,
  type PairedDevice,
  type PairingUri,
  pairDevice,
  parsePairingUri,
} from "./pairing.js";
export { newClientMessageId } from "./resume.js";
export type { WebSocketConstructor, WebSocketLike } from "./socket.js";
