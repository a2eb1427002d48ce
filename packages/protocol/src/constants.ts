/**
 * Protocol-wide constants of Pheby Protocol v1. Every number and closed string
 * set the spec names lives here, so the server, the client and the schemas
 * agree on one value.
 */

/** The only protocol version this package speaks. */
export const PROTOCOL_VERSION = 1 as const;

/** The 15 machine-readable error codes of the spec. */
export const ERROR_CODES = [
  "unauthorized",
  "auth_timeout",
  "version_mismatch",
  "bad_request",
  "invalid_json",
  "unknown_type",
  "not_found",
  "conversation_not_found",
  "approval_not_found",
  "clarify_not_found",
  "too_large",
  "rate_limited",
  "run_active",
  "internal_error",
  "not_implemented",
] as const;
/** One of the spec's error codes. */
export type ErrorCode = (typeof ERROR_CODES)[number];

/** Limits the spec sets, plus the few this package fixes where the spec is silent (see docs/protocol.md). */
export const LIMITS = {
  /** Maximum `chat.send` text length, in Unicode code points. */
  chatTextChars: 64_000,
  /** Maximum inbound WebSocket frame, in bytes (2 MiB). */
  frameBytes: 2 * 1024 * 1024,
  /** Maximum page size of `conversation.open`; a larger `limit` is capped to it, not rejected. */
  historyPage: 500,
  /** Page size of `conversation.open` when `limit` is omitted. */
  historyPageDefault: 200,
  /** Maximum number of `attachment_ids` in one `chat.send`. */
  attachmentsPerSend: 10,
  /** Maximum upload body, in bytes (64 MiB). */
  uploadBytes: 64 * 1024 * 1024,
  /** Text attachments up to this size (100 KiB) are inlined into the agent's turn. */
  inlineTextBytes: 100 * 1024,
  /** Maximum `request_id` length (our choice; the spec is silent). */
  requestIdChars: 256,
  /** Maximum conversation name length (our choice; the spec is silent). */
  conversationNameChars: 200,
  /** Maximum length of other free-text request fields such as a deny `reason`. */
  shortTextChars: 4_000,
  /** Maximum length of ID and model fields sent by the client. */
  idChars: 256,
  /**
   * Maximum number of `hello.features` a server accepts (our choice: a Pheby extension, see
   * docs/protocol.md). Earlier servers (0.1.0) accepted 16 and close a longer list with 4401, so clients
   * send at most {@link HELLO_FEATURES_SENT_MAX}.
   */
  helloFeatures: 64,
  /** Maximum length of one `hello.features` name. */
  featureNameChars: 64,
  /** `resume`: maximum `client_message_id` length (1..64 characters). */
  clientMessageIdChars: 64,
  /** `resume`: a repeated `client_message_id` gets the original outcome for this long (24 hours), in seconds. */
  clientMessageIdWindowSeconds: 24 * 60 * 60,
  /**
   * `resume`: outcomes remembered per credential (the master secret, or each paired device); beyond
   * it the oldest is forgotten early, so a repeat of a very old `client_message_id` may run again.
   */
  clientMessageIdsPerPrincipal: 10_000,
  /** `queue`: maximum number of queued runs per conversation; `run.queued.position` is 1..20. */
  queuedRunsPerConversation: 20,
  /** `schedules`: maximum number of schedules on a server (all conversations together). */
  schedules: 100,
  /** `schedules`: maximum schedule name length. */
  scheduleNameChars: 200,
  /** `schedules`: maximum cron expression length (five fields). */
  cronChars: 100,
  /** `schedules`: maximum IANA time zone name length. */
  timezoneChars: 64,
  /** `push`: maximum number of push subscriptions on a server; the oldest unused one goes first. */
  pushSubscriptions: 50,
  /** `push`: maximum length of a subscription's `endpoint` URL. */
  pushEndpointChars: 2048,
  /**
   * `push`: maximum size of a push payload's JSON text, in UTF-8 bytes. RFC 8291 leaves 3,993 bytes of
   * plaintext in the 4,096-byte push message (86 bytes of header, a 16-byte tag, a padding delimiter).
   */
  pushPayloadBytes: 3_993,
  /** `push`: maximum length of each text in a push payload (title, body, previews, choices). */
  pushTextChars: 256,
  /** `push`: maximum length of a push payload's `tag`, the RFC 8030 `Topic` it was sent with (base64url). */
  pushTopicChars: 32,
  /** `devices`: maximum device name length. */
  deviceNameChars: 200,
  /** `devices`: a pairing code is single-use and expires this long after `pair.create` (10 minutes), in seconds. */
  pairingCodeSeconds: 10 * 60,
  /** `devices`: minimum pairing code length: 22 base64url characters carry at least 128 random bits. */
  pairingCodeMinChars: 22,
  /** `devices`: maximum pairing code length. */
  pairingCodeMaxChars: 128,
  /** `activity`: maximum length of a tool call's `title` (host paths scrubbed). */
  toolTitleChars: 500,
  /** `activity`: maximum number of `locations` of one tool call. */
  toolLocations: 50,
  /** `activity`: maximum length of a location's or a diff's `path` and `display`. */
  toolPathChars: 4_096,
  /** `activity`: maximum number of `content` blocks of one tool call (and of an approval's `preview`). */
  toolContentBlocks: 20,
  /** `activity`: maximum size of a diff block's `patch`, in UTF-8 bytes (64 KiB). */
  toolPatchBytes: 64 * 1024,
  /** `activity`: maximum length of a text block's `text`; the server keeps the last ones (the end of an output matters most). */
  toolTextChars: 16_000,
  /** `activity`: maximum length of an `other` block's `label`. */
  toolLabelChars: 200,
  /** `activity`: maximum size of one serialised `tool.event`, in UTF-8 bytes (256 KiB); the last blocks are cut first. */
  toolEventBytes: 256 * 1024,
  /** `activity`: maximum number of entries of a plan. */
  planEntries: 100,
  /** `activity`: maximum length of one plan entry's `content`. */
  planEntryChars: 2_000,
  /** `activity`: maximum length of a usage `cost.currency`, as the agent reports it. */
  currencyChars: 16,
  /** `thoughts`: maximum length of one thought, in characters (code points); the server keeps no more of it. */
  thoughtChars: 64_000,
  /** `thoughts`: maximum length of all of one run's thoughts together; later thinking of the run is not sent. */
  thoughtCharsPerRun: 256_000,
  /** `modes`: most modes listed per conversation (the server keeps the agent's first ones). */
  modes: 50,
  /** `modes`: maximum mode name length (the server shortens a longer one). */
  modeNameChars: 200,
  /** `modes`: maximum mode description length (the server shortens a longer one). */
  modeDescriptionChars: 1_000,
  /** `modes`: most slash commands listed per conversation (the server keeps the agent's first ones). */
  commands: 200,
  /** `modes`: maximum slash command name length, without the slash (a longer one is not listed). */
  commandNameChars: 200,
  /** `modes`: maximum slash command description length (the server shortens a longer one). */
  commandDescriptionChars: 1_000,
  /** `modes`: maximum slash command input hint length (the server shortens a longer one). */
  commandHintChars: 200,
  /** `inbox`: maximum length of a conversation preview's text (the server shortens the last message). */
  inboxPreviewChars: 200,
  /** `inbox`: maximum `conversation.search` query length. */
  searchQueryChars: 200,
  /** `inbox`: most results of one `conversation.search` (`limit` 1..50). */
  searchResults: 50,
  /** `inbox`: results of `conversation.search` when `limit` is omitted. */
  searchResultsDefault: 20,
  /** `inbox`: maximum length of a search result's snippet. */
  searchSnippetChars: 200,
  /** `workspaces`: maximum length of an agent or workspace ID (`[a-z0-9-]`, at least 1). */
  workspaceIdChars: 32,
  /** `workspaces`: maximum length of an agent's or a workspace's display name. */
  workspaceNameChars: 200,
  /** `workspaces`: most agents one server configures (`agents.snapshot`, a workspace's `agents`). */
  agents: 64,
  /** `workspaces`: most workspaces one server configures (`workspaces.snapshot`). */
  workspaces: 256,
  /** `changes`: most files of one `changes.snapshot`; the rest are left out and `truncated` is true. */
  changesFiles: 1_000,
  /** `changes`: maximum size of one file's `patch` in `changes.file`, in UTF-8 bytes (256 KiB), then `truncated`. */
  changesPatchBytes: 256 * 1024,
  /** `changes`: maximum length of a `file_id`. */
  changesFileIdChars: 64,
} as const;

/**
 * Pheby extension of v1, negotiated in `hello.features`: on a connection that
 * enabled it, `message.delta` carries `offset` and only the draft's text from
 * `offset` on (see {@link applyDelta}). Clients that do not ask keep v1's
 * cumulative deltas.
 */
export const FEATURE_DELTA_APPEND = "delta.append" as const;

/**
 * Pheby extension of v1: Web Push notifications (RFC 8030/8291/8292). `ready` carries the server's VAPID
 * key; `push.subscribe`, `push.unsubscribe`, `push.list`, `push.test` and `presence` manage delivery.
 */
export const FEATURE_PUSH = "push" as const;

/**
 * Pheby extension of v1: resume after a drop. Conversation frames carry `seq`; `conversation.open`
 * with `since_seq` replays what was missed (`conversation.resumed`); `client_message_id` makes
 * `chat.send` and `conversation.create` safe to retry.
 */
export const FEATURE_RESUME = "resume" as const;

/**
 * Pheby extension of v1: `chat.send` with `queue: true` while a run is active is queued
 * (`run.queued`, `queue.changed`) instead of refused with `run_active`.
 */
export const FEATURE_QUEUE = "queue" as const;

/** Pheby extension of v1: scheduled prompts (`schedule.list`, `.create`, `.update`, `.delete`). */
export const FEATURE_SCHEDULES = "schedules" as const;

/**
 * Pheby extension of v1: `approval.request` and `clarify.request` (and their pending copies in
 * `conversation.history`) carry `expires_at`, when the agent gives up on an unanswered question.
 */
export const FEATURE_EXPIRY = "expiry" as const;

/**
 * Pheby extension of v1: pairing a phone with a one-time code (`pair.create`, `hello.pairing_code`)
 * and a revocable secret per device (`device.list`, `device.revoke`).
 */
export const FEATURE_DEVICES = "devices" as const;

/**
 * Pheby extension of v1: the agent's work. `tool.event` carries the call's kind, title, locations and
 * content (diffs, output; scrubbed, redacted, bounded), `approval.request` its call and a preview,
 * `tool.get` fetches any recorded call, and `plan.updated` / `usage.updated` report the agent's plan
 * and context usage.
 */
export const FEATURE_ACTIVITY = "activity" as const;

/**
 * Pheby extension of v1: the agent's thinking (`thought.delta`, `thought.complete`, and the active run's
 * thoughts in `conversation.history`). Separate from the rest because it can be the bulk of a run's bytes.
 */
export const FEATURE_THOUGHTS = "thoughts" as const;

/**
 * Pheby extension of v1: the agent's modes (`modes.list`, `mode.set`, `mode.changed`) and slash
 * commands (`commands.list`, `commands.snapshot`); `conversation.history` carries `mode_id`.
 */
export const FEATURE_MODES = "modes" as const;

/**
 * Pheby extension of v1: the conversation list as an inbox. List entries carry `status`, `pending`,
 * `unread` (per reader), `preview` and `archived`; `conversation.read`, `conversation.archive`,
 * `conversation.search` and the `conversation.status` event.
 */
export const FEATURE_INBOX = "inbox" as const;

/**
 * Pheby extension of v1: several agents and workspaces on one server. `agents.list` / `agents.changed`
 * and `workspaces.list`; `conversation.create` picks an agent, a workspace and a git worktree; list
 * entries carry `agent_id`, `workspace_id` and `branch`; model and reasoning requests take `agent_id`.
 */
export const FEATURE_WORKSPACES = "workspaces" as const;

/**
 * Pheby extension of v1: what a conversation changed in its git repository, read-only: `changes.list`
 * (files against the conversation's base commit), `changes.diff` (one file's patch) and the
 * `changes.changed` event at the end of a run that changed them.
 */
export const FEATURE_CHANGES = "changes" as const;

/** Every feature this protocol package defines (a server may support fewer; unknown names are ignored). */
export const FEATURES = [
  FEATURE_DELTA_APPEND,
  FEATURE_PUSH,
  FEATURE_RESUME,
  FEATURE_QUEUE,
  FEATURE_SCHEDULES,
  FEATURE_EXPIRY,
  FEATURE_DEVICES,
  FEATURE_ACTIVITY,
  FEATURE_MODES,
  FEATURE_THOUGHTS,
  FEATURE_INBOX,
  FEATURE_WORKSPACES,
  FEATURE_CHANGES,
] as const;
/** One feature name defined by this package. */
export type Feature = (typeof FEATURES)[number];

/**
 * Every feature, ordered by how much it changes what an app can show first, so a client that must
 * drop names from its `hello` (see {@link HELLO_FEATURES_SENT_MAX}) drops the ones it misses least:
 *
 * 1. `delta.append`: every streamed answer, the first thing on screen, arrives through it.
 * 2. `resume`: what reappears after a drop (a replay instead of a stale draft) and sends safe to retry.
 * 3. `queue`: follow-ups typed during a run are shown queued instead of refused.
 * 4. `expiry`: approval and question cards show when they lapse.
 * 5. `push`: notifications while the app is in the background; no frame on screen depends on it.
 * 6. `schedules`: a screen of its own, opened later.
 * 7. `devices`: settings (pairing, revoking); a pairing `hello` asks for it whatever else it drops.
 * 8. `activity`: diffs, output, the plan and the context meter, detail around the answer.
 * 9. `modes`: the mode picker and the command palette; without them the agent still works.
 * 10. `thoughts`: the agent's thinking, folded away by default; it can be the bulk of a run's bytes.
 * 11. `inbox`: status, unread and search in the list; without it the list still names every conversation.
 * 12. `workspaces`: pick an agent, a project and a worktree; without it every conversation uses the default agent.
 * 13. `changes`: the review of what a conversation changed, a screen of its own opened after a run.
 *
 * A new feature takes its place in this list in the change that adds it (a test checks that every
 * feature is here exactly once).
 */
export const FEATURE_PRIORITY = [
  FEATURE_DELTA_APPEND,
  FEATURE_RESUME,
  FEATURE_QUEUE,
  FEATURE_EXPIRY,
  FEATURE_PUSH,
  FEATURE_SCHEDULES,
  FEATURE_DEVICES,
  FEATURE_ACTIVITY,
  FEATURE_MODES,
  FEATURE_THOUGHTS,
  FEATURE_INBOX,
  FEATURE_WORKSPACES,
  FEATURE_CHANGES,
] as const satisfies readonly Feature[];

/**
 * The most names a client puts in `hello.features`: earlier servers (0.1.0) accepted at most 16 and answer
 * a longer list with `unauthorized` and a final 4401 close, so a client never sends more to a server it
 * does not know, whatever {@link LIMITS}.helloFeatures (what a server accepts) says. Clients keep the
 * first 16 of the names they ask for in {@link FEATURE_PRIORITY} order (see {@link helloFeatureNames}).
 */
export const HELLO_FEATURES_SENT_MAX = 16 as const;

/**
 * The `hello.features` a client sends for the names it wants: known features in
 * {@link FEATURE_PRIORITY} order, then any other names in the order given, without repeats, at most
 * {@link HELLO_FEATURES_SENT_MAX}. `required` names (a pairing hello's `devices`) are kept whatever
 * else is dropped.
 *
 * @example
 * ```ts
 * helloFeatureNames(["push", "delta.append"]) // → ["delta.append", "push"]
 * ```
 */
export function helloFeatureNames(wanted: Iterable<string>, required: Iterable<string> = []): string[] {
  const names = new Set(wanted);
  const must = new Set([...required].filter((name) => names.has(name)));
  const rank = (name: string) => {
    const i = (FEATURE_PRIORITY as readonly string[]).indexOf(name);
    return i === -1 ? FEATURE_PRIORITY.length : i;
  };
  // Array.prototype.sort is stable: unknown names keep the caller's order after the known ones.
  const ordered = [...names].sort((a, b) => rank(a) - rank(b));
  const kept = [...must];
  for (const name of ordered) {
    if (kept.length >= HELLO_FEATURES_SENT_MAX) break;
    if (!must.has(name)) kept.push(name);
  }
  return ordered.filter((name) => kept.includes(name));
}

/** Reasoning effort levels; `none` disables thinking. */
export const REASONING_EFFORTS = [
  "none",
  "minimal",
  "low",
  "medium",
  "high",
  "xhigh",
  "max",
  "ultra",
] as const;
/** One reasoning effort level. */
export type ReasoningEffort = (typeof REASONING_EFFORTS)[number];

/** Statuses of a `tool.event`. */
export const TOOL_STATUSES = ["running", "completed", "failed", "cancelled"] as const;
/** One tool status. */
export type ToolStatus = (typeof TOOL_STATUSES)[number];

/** `activity`: the kind of a tool call, as ACP names it (`other` when the agent gives none). */
export const TOOL_KINDS = [
  "read",
  "edit",
  "delete",
  "move",
  "search",
  "execute",
  "think",
  "fetch",
  "switch_mode",
  "other",
] as const;
/** One tool kind. */
export type ToolKind = (typeof TOOL_KINDS)[number];

/** `activity`: the status of one plan entry. */
export const PLAN_ENTRY_STATUSES = ["pending", "in_progress", "completed"] as const;
/** One plan entry status. */
export type PlanEntryStatus = (typeof PLAN_ENTRY_STATUSES)[number];

/** `activity`: the priority of one plan entry. */
export const PLAN_ENTRY_PRIORITIES = ["high", "medium", "low"] as const;
/** One plan entry priority. */
export type PlanEntryPriority = (typeof PLAN_ENTRY_PRIORITIES)[number];

/** Final statuses of a run (`run.finished.status`). */
export const RUN_STATUSES = ["completed", "cancelled", "failed"] as const;
/** One final run status. */
export type RunStatus = (typeof RUN_STATUSES)[number];

/** Attachment kinds. */
export const ATTACHMENT_KINDS = ["image", "voice", "video", "audio", "document"] as const;
/** One attachment kind. */
export type AttachmentKind = (typeof ATTACHMENT_KINDS)[number];

/** Attachment directions: uploaded by the client, or produced by the agent. */
export const ATTACHMENT_DIRECTIONS = ["inbound", "outbound"] as const;
/** One attachment direction. */
export type AttachmentDirection = (typeof ATTACHMENT_DIRECTIONS)[number];

/** Approval choices, in the spec's order. */
export const APPROVAL_CHOICES = ["once", "session", "always", "deny"] as const;
/** One approval choice. */
export type ApprovalChoice = (typeof APPROVAL_CHOICES)[number];

/** Scopes of model, reasoning and YOLO settings. */
export const SETTING_SCOPES = ["conversation", "global"] as const;
/** One setting scope. */
export type SettingScope = (typeof SETTING_SCOPES)[number];

/** Roles in conversation history. */
export const MESSAGE_ROLES = ["user", "assistant"] as const;
/** One history role. */
export type MessageRole = (typeof MESSAGE_ROLES)[number];

/**
 * `schedules`: who made a schedule. `user`: a client's `schedule.create` (the owner or a paired
 * device); `agent`: the agent, through Pheby's `schedule_create` tool (it waits for the user's
 * confirmation before it ever runs).
 */
export const SCHEDULE_CREATORS = ["user", "agent"] as const;
/** One schedule creator. */
export type ScheduleCreator = (typeof SCHEDULE_CREATORS)[number];

/**
 * `inbox`: a conversation's status in the list, in order of precedence: `waiting` (an approval or
 * question is pending), `running`, `failed` (the last run failed, until the next starts), `idle`.
 */
export const CONVERSATION_STATUSES = ["waiting", "running", "failed", "idle"] as const;
/** One conversation status. */
export type ConversationStatusValue = (typeof CONVERSATION_STATUSES)[number];

/** `workspaces`: an agent's status: not started yet, starting, running and answering, or failed to start. */
export const AGENT_STATUSES = ["idle", "starting", "ready", "failed"] as const;
/** One agent status. */
export type AgentStatus = (typeof AGENT_STATUSES)[number];

/** `changes`: how a file differs from the conversation's base commit (git's name-status letters A, M, D, R, T). */
export const CHANGE_STATUSES = ["added", "modified", "deleted", "renamed", "type_changed"] as const;
/** One change status. */
export type ChangeStatus = (typeof CHANGE_STATUSES)[number];

/** `changes`: what a changed path is in the working tree (or was, when deleted). */
export const CHANGED_FILE_TYPES = ["file", "symlink", "submodule"] as const;
/** One changed file type. */
export type ChangedFileType = (typeof CHANGED_FILE_TYPES)[number];

/** `push`: the events a subscription can ask for (`push.subscribe.events`; all of them by default). */
export const PUSH_EVENT_KINDS = ["approval", "clarify", "run_finished", "message"] as const;
/** One push event kind. */
export type PushEventKind = (typeof PUSH_EVENT_KINDS)[number];

/**
 * `push`: the `kind` of a push payload: an event kind, `resolved` (replaces an approval or clarify
 * notification that was answered or withdrawn), `test` (from `push.test`) or `schedule` (the agent
 * made a schedule that waits for the user's confirmation; sent to every subscription).
 */
export const PUSH_PAYLOAD_KINDS = [...PUSH_EVENT_KINDS, "resolved", "test", "schedule"] as const;
/** One push payload kind. */
export type PushPayloadKind = (typeof PUSH_PAYLOAD_KINDS)[number];

/** `push`: what a client's `presence` says about its UI. */
export const PRESENCE_STATES = ["active", "background"] as const;
/** One presence state. */
export type PresenceState = (typeof PRESENCE_STATES)[number];

/**
 * WebSocket close codes the server uses. The spec names 4401 only; the rest
 * are Pheby's documented choices (docs/protocol.md).
 */
export const CLOSE_CODES = {
  /** Normal close. */
  normal: 1000,
  /** Server shutting down. */
  goingAway: 1001,
  /** Frame over 2 MiB (after the `too_large` error). */
  messageTooBig: 1009,
  /** Wrong secret, or a non-`hello` first frame. */
  unauthorized: 4401,
  /** Source address locked out after repeated failed hellos. */
  lockedOut: 4429,
  /** No `hello` within the auth timeout. */
  authTimeout: 4408,
  /** Unsupported `protocol_version`. */
  versionMismatch: 4426,
  /** The client read too slowly and its send buffer overflowed. */
  slowConsumer: 4503,
} as const;
