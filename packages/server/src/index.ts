/**
 * `@pheby/server`: a Pheby Protocol v1 server as a library. Create it with
 * {@link createPhebyServer}, then `listen()`; `close()` shuts it down.
 *
 * @packageDocumentation
 */

export { pathBaseOf } from "./activity/path-base.js";
export type { PlaceContext } from "./activity/place.js";
export { type RawToolCall, type RawToolContent, ToolDetailBuilder } from "./activity/tool-detail.js";
export { type AcpBackendOptions, createAcpBackend } from "./agent/acp/index.js";
export { nearestChoice } from "./agent/nearest.js";
export type * from "./agent/port.js";
export { createSimulatorBackend, type SimulatorOptions } from "./agent/simulator/index.js";
export { lookupUser, type OsUser } from "./agent-user/lookup.js";
export type { AgentShare } from "./agent-user/shared-dir.js";
export { DEFAULT_ID, ENTITY_ID, MAX_AGENTS, MAX_WORKSPACES } from "./agents/config.js";
export type { AgentStatus, AgentView } from "./agents/registry.js";
export { type DeviceAdmin, type DeviceSummary, openDeviceAdmin } from "./devices/admin.js";
export { isPublicWebSocketUrl, pairingUri } from "./devices/uri.js";
export { GitFailedError, GitTimeoutError } from "./git/errors.js";
export { type GitResult, GitRunner, type GitRunnerOptions, type GitRunOptions } from "./git/runner.js";
export {
  createInMemoryServer,
  type InMemoryServer,
  type InMemorySocket,
  type MemoryWebSocketConstructor,
} from "./in-memory.js";
export { AGENT_TOOL_NAMES, type AgentToolName } from "./mcp/tools.js";
export {
  type AgentOption,
  DEFAULT_ASK_TIMEOUT_MS,
  DEFAULT_ATTACHMENT_RETENTION_DAYS,
  DEFAULT_AUTH_TIMEOUT_MS,
  DEFAULT_CANCEL_GRACE_MS,
  DEFAULT_DELTA_INTERVAL_MS,
  DEFAULT_HEARTBEAT_INTERVAL_MS,
  DEFAULT_HISTORY_PAGE_BYTES,
  DEFAULT_HOST,
  DEFAULT_HTTP_IDLE_TIMEOUT_MS,
  DEFAULT_LOCKOUT,
  DEFAULT_MAX_BUFFERED_BYTES,
  DEFAULT_MISSED_GRACE_MS,
  DEFAULT_PORT,
  optionRules,
  type PhebyServerOptions,
  PhebyServerOptionsSchema,
  type ResolvedServerOptions,
  resolveServerOptions,
  type WorkspaceOption,
} from "./options.js";
export { THIN_ABOVE_BYTES, THIN_MAX_INTERVAL_MS, thinInterval } from "./outbox/thinning.js";
export type { Resolve } from "./push/address.js";
export type { RetryPolicy } from "./push/delivery.js";
export { DEFAULT_PUSH_SUBJECT, type PushOptions } from "./push/service.js";
export { checkTimezone } from "./schedules/rules.js";
export { createPhebyServer, type ListenInfo, type PhebyServer } from "./server.js";
export {
  DEFAULT_REPLAY_LIMITS,
  DEFAULT_RESUME_LOG_LIMITS,
  type ReplayLimits,
  type ResumeLogLimits,
} from "./store/resume-log.js";
