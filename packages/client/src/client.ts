import {
  CLOSE_CODES,
  type ClientMessageInput,
  type ConversationStatusValue,
  decodeServerFrame,
  FEATURE_DELTA_APPEND,
  FEATURE_PUSH,
  FEATURE_RESUME,
  FEATURE_THOUGHTS,
  helloFeatureNames,
  PROTOCOL_VERSION,
  type PresenceState,
  type Agent as ProtocolAgent,
  type ChangedFile as ProtocolChangedFile,
  type Workspace as ProtocolWorkspace,
  type PushEventKind,
  type ReasoningEffort,
  type ReplyOf,
  type RequestType,
  type Schedule,
  type ServerMessage,
  type ServerMessageOf,
  type ServerMessageType,
} from "@pheby/protocol";
import type { BackoffOptions } from "./backoff.js";
import { Connection, type ConnectionState, isReadyOf, type Link } from "./connection.js";
import { Emitter } from "./emitter.js";
import { PhebyError } from "./errors.js";
import { AppendTexts, type ClientExtension, DeltaAppend, Thoughts } from "./extensions.js";
import { DEFAULT_FEATURES } from "./features.js";
import { downloadAttachment, type UploadSource, uploadAttachment } from "./files.js";
import { PushPresence } from "./push.js";
import { type RequestFrame, Requests } from "./requests.js";
import { Resume } from "./resume.js";
import { RESYNC_REQUEST_PREFIX, RunFrames } from "./run-frames.js";
import type { WebSocketConstructor } from "./socket.js";

export type { ConnectionState } from "./connection.js";

/** Options of {@link PhebyClient} (the same names as the Kotlin client's `PhebyClientOptions`, in ms). */
export interface PhebyClientOptions {
  /** WebSocket URL, e.g. `wss://pheby.example.com/ws` or `ws://127.0.0.1:8620/ws`. */
  url: string;
  /** The master secret, or a device secret (the `devices` extension: see {@link pairDevice}). Sent once, in `hello`. */
  secret: string;
  /**
   * The Pheby extensions to ask for in `hello.features` (default {@link DEFAULT_FEATURES}: `delta.append`,
   * `push`, `resume`, `queue`, `activity`, `modes`, `inbox`, `workspaces`, `changes`); {@link PhebyClient.features} says which the server enabled. The one
   * switch for every extension: add to the defaults for the others
   * (`[...DEFAULT_FEATURES, FEATURE_SCHEDULES]`), leave one out to go without it (`[]`: plain v1).
   * The client's own behaviour follows the list: only with `resume` in it does a send carry a
   * `client_message_id` and survive a drop. Names the client has no behaviour for are still asked for;
   * their requests work through `request()` and their events reach `on()`. At most 16 names are sent,
   * in `@pheby/protocol`'s `FEATURE_PRIORITY` order (`helloFeatureNames`).
   */
  features?: readonly string[];
  /** WebSocket implementation (the transport seam); defaults to the global one, else the `ws` package. */
  WebSocket?: WebSocketConstructor;
  /** Automatic reconnect with exponential backoff and jitter; `false` disables it. Default on. */
  reconnect?: false | BackoffOptions;
  /** How long a request waits for its reply (default 30 s). */
  requestTimeoutMs?: number;
  /** fetch implementation for uploads and downloads (default: the global one). */
  fetch?: typeof fetch;
  /** Application-level `ping` interval (default 25 s; 0 disables). A missed `pong` forces a reconnect. */
  pingIntervalMs?: number;
}

/**
 * A Web Push subscription as browsers (`PushSubscription.toJSON()`) and UnifiedPush
 * (`PushEndpoint`: url, p256dh, auth) hand it over.
 */
export interface PushSubscriptionKeys {
  endpoint: string;
  keys: { p256dh: string; auth: string };
}

/** A frame the server sent that `@pheby/protocol` rejects. */
export interface InvalidFrame {
  raw: string;
  error: { code: string; message: string };
}

/**
 * What a resync re-fetched, by conversation ID (as the Kotlin client's `resyncs`): the fresh snapshot
 * of each followed conversation that needs its local state replaced. A conversation the server
 * resumed (`resume`) is not in it: its missed events reached handlers after a `conversation.resumed`.
 */
export type ResyncResult = Map<string, ServerMessageOf<"conversation.history">>;

/** Options of {@link PhebyClient.chat}. */
export interface ChatOptions {
  /** Up to 10 uploads to this conversation to claim. */
  attachmentIds?: string[];
  /** `queue`: a send during another run waits for it (`run.queued`) instead of failing with `run_active`. */
  queue?: boolean;
  /** The send's idempotency key (one is made with `resume` when absent). */
  clientMessageId?: string;
}

/**
 * The reply to a request message: {@link ReplyOf} its type, or, for the two requests that may be
 * answered otherwise, either: `chat.send` with `queue` (`run.queued` while a run is active) and
 * `conversation.open` with `since_seq` (`conversation.resumed` when the missed events follow).
 */
export type ReplyTo<M extends { type: RequestType }> = M extends { type: "chat.send" }
  ? "queue" extends keyof M
    ? M["queue" & keyof M] extends false | undefined
      ? ServerMessageOf<"run.accepted">
      : ServerMessageOf<"run.accepted"> | ServerMessageOf<"run.queued">
    : ServerMessageOf<"run.accepted">
  : M extends { type: "conversation.open" }
    ? "since_seq" extends keyof M
      ? M["since_seq" & keyof M] extends undefined
        ? ServerMessageOf<"conversation.history">
        : ServerMessageOf<"conversation.history"> | ServerMessageOf<"conversation.resumed">
      : ServerMessageOf<"conversation.history">
    : ReplyOf<M["type"]>;

/**
 * A conversation's list state (the `inbox` extension's `conversation.status`): the reply to
 * {@link PhebyClient.markRead} and {@link PhebyClient.archive}, and an event (`on("conversation.status")`)
 * whenever it changes, with this reader's own `unread`.
 */
export type InboxStatus = ServerMessageOf<"conversation.status">;
/** One entry of `conversation.snapshot`; with `inbox` it also carries `status`, `unread`, `preview`, … */
export type ConversationEntry = ServerMessageOf<"conversation.snapshot">["conversations"][number];
/** A conversation status as the list shows it: `waiting`, `running`, `failed` or `idle`. */
export type ConversationStatus = ConversationStatusValue;
/** One result of {@link PhebyClient.search}. */
export type SearchHit = ServerMessageOf<"conversation.results">["results"][number];

/** An agent the server runs (the `workspaces` extension): `agent_id`, `name`, `status`. */
export type Agent = ProtocolAgent;
/** A workspace the server offers (the `workspaces` extension): `workspace_id`, `name`, `agents`, `git`. */
export type Workspace = ProtocolWorkspace;
/** What {@link PhebyClient.createConversation} takes: a name and, with `workspaces`, where it runs. */
export interface CreateConversationOptions {
  name?: string;
  /** `workspaces`: the conversation's agent (default: the workspace's first, or the default agent). */
  agentId?: string;
  /** `workspaces`: the conversation's workspace (default: the first that allows the agent). */
  workspaceId?: string;
  /** `workspaces`: run it in a new git worktree of the workspace, on a branch `pheby/<id>`. */
  worktree?: boolean;
  /** `resume`: the idempotency key (one is made up when absent and `resume` is asked for). */
  clientMessageId?: string;
}
/** Which conversations {@link PhebyClient.listConversations} lists. */
export interface ListConversationsOptions {
  /** `inbox`: only the archived ones (default: the unarchived ones). */
  archived?: boolean;
  /** `workspaces`: only this agent's. */
  agentId?: string;
  /** `workspaces`: only this workspace's. */
  workspaceId?: string;
}
/** The scope of a model or reasoning call: a conversation's, or (with `agentId`, `workspaces`) an agent's global one. */
export interface SettingScopeOptions {
  conversationId?: string;
  /** `workspaces`: the agent whose global setting this is (default: the default agent). */
  agentId?: string;
}
/** What a conversation changed (the `changes` extension's `changes.snapshot`): `base`, `files`, `truncated`. */
export type ChangesSnapshot = ServerMessageOf<"changes.snapshot">;
/** One changed file of a {@link ChangesSnapshot}. */
export type ChangedFile = ProtocolChangedFile;
/** One changed file's patch (`changes.file`): `path`, `patch` (null for a binary file), `truncated`. */
export type ChangedFilePatch = ServerMessageOf<"changes.file">;

// The wire fields of a scope: only those given, so a v1 call stays a v1 frame.
function scopeFields(options: SettingScopeOptions): { conversation_id?: string; agent_id?: string } {
  return {
    ...(options.conversationId === undefined ? {} : { conversation_id: options.conversationId }),
    ...(options.agentId === undefined ? {} : { agent_id: options.agentId }),
  };
}

/** Frame types and `"*"` (every frame), as {@link PhebyClient.on} takes them. */
export type FrameEvents = { [T in ServerMessageType]: ServerMessageOf<T> } & { "*": ServerMessage };
type LifecycleEvents = {
  resync: ResyncResult;
  invalidFrame: InvalidFrame;
};

/**
 * A typed Pheby Protocol v1 client: a facade over the connection (socket, handshake, reconnect,
 * ping: connection.ts), request correlation and the send queue (requests.ts), and the extensions
 * asked for in {@link PhebyClientOptions.features} (extensions.ts, resume.ts, push.ts). The same
 * design as the Kotlin client.
 *
 * ```ts
 * const client = new PhebyClient({ url: "ws://127.0.0.1:8620/ws", secret });
 * await client.connect();
 * const { conversation_id } = await client.request({ type: "conversation.create", name: "Hi" });
 * for await (const event of client.chat(conversation_id, "Hello")) {
 *   if (event.type === "message.delta") render(event.text); // always the whole draft so far
 * }
 * ```
 */
export class PhebyClient {
  private readonly frames = new Emitter<FrameEvents>();
  private readonly lifecycle = new Emitter<LifecycleEvents>();
  private readonly asked: readonly string[];
  private readonly requests: Requests;
  private readonly connection: Connection;
  /** The extensions asked for that the client implements; `resume` first, so what it holds back reaches no other. */
  private readonly extensions: readonly ClientExtension[];
  private readonly resume: Resume | undefined;
  private readonly push: PushPresence | undefined;
  /** Re-opened after every reconnect, in the order followed, with their history limit. */
  private readonly followed = new Map<string, number | undefined>();
  private featuresValue: readonly string[] = [];
  private vapidKey: string | undefined;
  /** A reconnect's catch-up is running: sends safe to repeat wait for it, so they keep their order. */
  private recovering = false;

  constructor(private readonly options: PhebyClientOptions) {
    this.asked = options.features ?? DEFAULT_FEATURES;
    const has = (feature: string) => this.asked.includes(feature);
    this.resume = has(FEATURE_RESUME) ? new Resume() : undefined;
    this.push = has(FEATURE_PUSH) ? new PushPresence() : undefined;
    // Message and thought deltas are stitched by one rule, and a gap in either is repaired by one re-open.
    const texts = new AppendTexts();
    const appendDeltas = has(FEATURE_DELTA_APPEND) ? new DeltaAppend(texts) : undefined;
    const thoughts = has(FEATURE_THOUGHTS) ? new Thoughts(texts) : undefined;
    this.extensions = [this.resume, appendDeltas, thoughts, this.push].filter(
      (e): e is NonNullable<typeof e> => e !== undefined,
    );
    this.requests = new Requests(options.requestTimeoutMs ?? 30_000, has(FEATURE_RESUME));
    this.connection = new Connection(options, this.requests, {
      hello: () => {
        const features = helloFeatureNames(this.asked);
        return {
          type: "hello",
          secret: this.options.secret,
          protocol_version: PROTOCOL_VERSION,
          ...(features.length === 0 ? {} : { features }),
        };
      },
      frame: (link, raw) => this.onFrame(link, raw),
      opened: (link) => this.onOpened(link),
      dropped: (link, retain) => {
        this.requests.dropped(link.socket, retain);
        if (!this.connection.willReconnect) this.requests.failQueue(this.connection.failure());
      },
    });
  }

  /** The current connection state: `idle`, `connecting`, `open`, `reconnecting`, `failed` or `closed`. */
  get state(): ConnectionState {
    return this.connection.state;
  }

  /**
   * Open the socket and complete the handshake. Resolves with `ready`; rejects
   * with a {@link PhebyError} (`unauthorized`, `version_mismatch`, `rate_limited`,
   * `auth_timeout`, `connection_closed`). After success, drops are repaired
   * automatically unless `reconnect: false`: `unauthorized` and `version_mismatch`
   * (close 4401, 4426) stop reconnecting (`failed`); a lockout (`rate_limited`,
   * close 4429) waits the `retryAfterMs` the server named, then tries again.
   */
  connect(): Promise<ServerMessageOf<"ready">> {
    return this.connection.connect();
  }

  /**
   * The Pheby extensions the server enabled on the last connection (`ready.features`; empty from a
   * server without them, or before the first `ready`).
   */
  get features(): readonly string[] {
    return this.featuresValue;
  }

  /**
   * The server's VAPID public key (`ready.push.vapid_public_key`, base64url): the
   * `applicationServerKey` of a browser subscription, or what a UnifiedPush distributor is
   * registered with. Undefined when the server did not enable `push`.
   */
  get vapidPublicKey(): string | undefined {
    return this.vapidKey;
  }

  /**
   * Subscribe to push notifications (`push.subscribe`); resolves with the `subscription_id`. The
   * same endpoint again updates its subscription. `events` narrows what is pushed (default: all).
   */
  async subscribePush(
    subscription: PushSubscriptionKeys,
    options: { deviceName?: string; events?: PushEventKind[] } = {},
  ): Promise<string> {
    const reply = await this.request({
      type: "push.subscribe",
      endpoint: subscription.endpoint,
      keys: { p256dh: subscription.keys.p256dh, auth: subscription.keys.auth },
      ...(options.deviceName === undefined ? {} : { device_name: options.deviceName }),
      ...(options.events === undefined ? {} : { events: options.events }),
    });
    return reply.subscription_id;
  }

  /** Remove a push subscription (`push.unsubscribe`). */
  async unsubscribePush(subscriptionId: string): Promise<void> {
    await this.request({ type: "push.unsubscribe", subscription_id: subscriptionId });
  }

  /** The push subscriptions this credential may see (`push.list`), oldest first. */
  async listPush(): Promise<ServerMessageOf<"push.subscriptions">["subscriptions"]> {
    return (await this.request({ type: "push.list" })).subscriptions;
  }

  /** Send a test notification to one subscription (`push.test`) and resolve with the push service's verdict. */
  testPush(subscriptionId: string): Promise<ServerMessageOf<"push.tested">> {
    return this.request({ type: "push.test", subscription_id: subscriptionId });
  }

  /**
   * Tell the server whether this UI is in front and which conversation it shows (`presence`, no
   * reply). A push for a conversation is skipped only while some connection says it is `active` on
   * it. Remembered and repeated after a reconnect; sent only when the server enabled `push`.
   */
  presence(state: PresenceState, conversationId?: string): void {
    const link = this.connection.current;
    this.push?.say(
      { state, ...(conversationId === undefined ? {} : { conversation_id: conversationId }) },
      link?.extensions.includes(this.push) ? link : undefined,
    );
  }

  /** Close the connection for good (no reconnect). Pending requests and the send queue reject with `connection_closed`. */
  close(): void {
    this.connection.close();
    this.requests.failQueue(new PhebyError("connection_closed", "client closed"));
  }

  /**
   * Send a request and resolve with its direct reply ({@link ReplyTo}). A
   * `request_id` is filled in when absent; with `resume` asked for (the default), a
   * `chat.send` or `conversation.create` without `client_message_id` gets one.
   * Rejects with a {@link PhebyError} carrying the server's error code.
   *
   * While the client is reconnecting after a drop, such a send waits in the
   * send queue and goes out once the connection is back (and, with `resume`, the
   * followed conversations are caught up); other requests reject with
   * `connection_closed`.
   */
  request<T extends RequestType, M extends ClientMessageInput<T> & { type: T }>(
    message: M,
    options: { timeoutMs?: number } = {},
  ): Promise<ReplyTo<M>> {
    return this.sendRequest(this.requests.frameOf(message), options.timeoutMs) as Promise<ReplyTo<M>>;
  }

  private sendRequest(frame: RequestFrame, timeoutMs?: number): Promise<ServerMessage> {
    const link = this.connection.current;
    // During a reconnect's catch-up a send safe to repeat joins the queue, behind those that waited.
    const direct = link && !(this.recovering && this.requests.canWait(frame));
    return this.requests.send(frame, direct ? link.socket : undefined, {
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
      canWait: this.connection.willReconnect,
    });
  }

  /** Send a frame without waiting for anything (e.g. to test a server with raw input). */
  send(frame: unknown): void {
    const link = this.connection.current;
    if (!link) throw new PhebyError("connection_closed", "not connected");
    link.socket.send(typeof frame === "string" ? frame : JSON.stringify(frame));
  }

  /**
   * Send a message and iterate over its run as it happens, then end: the `run.accepted` reply, then
   * the conversation's `message.start`, `message.delta` (the whole draft each time), `tool.event`,
   * `approval.request` / `clarify.request` and their `*.resolved`, `attachment.added`,
   * `message.complete` (notices included), with `activity` the run's `plan.updated` and the
   * conversation's `usage.updated`, with `thoughts` its `thought.delta` (the whole thought so far) and
   * `thought.complete`, and finally the run's `run.finished`. The same run
   * tracking as the Kotlin client's `chat()`.
   *
   * With `queue` (the `queue` extension) a send during another run is queued: the iteration first
   * yields `run.queued` and the conversation's `queue.changed` while it waits, then the run as above
   * once it starts (or its `run.finished` `cancelled`, when `run.cancel` removed it from the queue).
   *
   * Answer questions from the loop (`approval.respond`, …). The conversation is followed while the
   * iteration runs, so a drop does not lose the run: after the reconnect, with `resume` the missed
   * frames follow as if never missed (a send whose reply was lost is sent again first, without a
   * second run); without, it yields the conversation's fresh `conversation.history` and ends right
   * after it when the run is no longer active, else the run's frames continue. Throws a
   * {@link PhebyError} if `chat.send` is refused (e.g. `run_active`) or the connection fails for good
   * (`failed`, `closed`). Leaving the loop early stops listening, not the run (`run.cancel` does that).
   *
   * Subscribe before it starts: the frames are collected from the moment `chat()` is called.
   */
  chat(
    conversationId: string,
    text: string,
    options: ChatOptions = {},
  ): AsyncIterableIterator<ServerMessage> {
    const frame = this.requests.frameOf({
      type: "chat.send",
      conversation_id: conversationId,
      text,
      ...(options.attachmentIds?.length ? { attachment_ids: options.attachmentIds } : {}),
      ...(options.clientMessageId === undefined ? {} : { client_message_id: options.clientMessageId }),
      ...(options.queue ? { queue: true } : {}),
    });
    const run = new RunFrames(
      conversationId,
      frame.request_id,
      frame.client_message_id as string | undefined,
    );
    const ready: ServerMessage[] = [];
    let failure: unknown;
    let wake: (() => void) | undefined;
    const emit = (frames: ServerMessage[]) => {
      ready.push(...frames);
      wake?.();
    };
    const fail = (error: unknown) => {
      failure ??= error;
      wake?.();
    };
    const offFrames = this.frames.on("*", (message) => emit(run.take(message)));
    const offState = this.connection.onState((state) => {
      if (state === "failed" || state === "closed") fail(this.connection.failure());
    });
    const added = !this.followed.has(conversationId);
    if (added) this.followed.set(conversationId, undefined);
    const stop = () => {
      offFrames();
      offState();
      if (added) this.followed.delete(conversationId);
    };
    this.sendRequest(frame).then(
      (reply) => emit(run.learn(reply as ServerMessageOf<"run.accepted">)),
      (error: unknown) => fail(error),
    );
    async function* frames(): AsyncGenerator<ServerMessage> {
      try {
        while (true) {
          const next = ready.shift();
          if (next) {
            yield next;
            continue;
          }
          if (run.finished) return;
          if (failure !== undefined) throw failure;
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
          wake = undefined;
        }
      } finally {
        stop();
      }
    }
    return frames();
  }

  /** Upload a file to a conversation; see {@link uploadAttachment}. */
  upload(conversationId: string, source: UploadSource, extra?: Parameters<typeof uploadAttachment>[3]) {
    return uploadAttachment(this.options, conversationId, source, extra);
  }

  /** Download an attachment; see {@link downloadAttachment}. */
  download(
    attachment: Parameters<typeof downloadAttachment>[1],
    extra?: Parameters<typeof downloadAttachment>[2],
  ) {
    return downloadAttachment(this.options, attachment, extra);
  }

  /**
   * `pair.create` (the `devices` extension; owner only): a one-time pairing code and its
   * `pheby://pair` URI for a phone to scan. Needs `features: ["devices"]`.
   */
  createPairing(name?: string): Promise<ServerMessageOf<"pair.created">> {
    return this.request({ type: "pair.create", ...(name === undefined ? {} : { name }) });
  }

  /** `device.list` (the `devices` extension; owner only): the paired devices, oldest first. */
  async listDevices(): Promise<ServerMessageOf<"device.snapshot">["devices"]> {
    return (await this.request({ type: "device.list" })).devices;
  }

  /**
   * `device.revoke` (the `devices` extension; owner only): the device's connections are closed and
   * its secret refused from now on. Rejects with `not_found` for an unknown ID.
   */
  async revokeDevice(deviceId: string): Promise<void> {
    await this.request({ type: "device.revoke", device_id: deviceId });
  }

  /**
   * Confirm a schedule the agent made (the `schedules` extension): `schedule.update { enabled: true }`,
   * which sets `confirmed`. It runs from then on like the user's own. Resolves with its new state.
   */
  async confirmSchedule(scheduleId: string): Promise<Schedule> {
    return (await this.request({ type: "schedule.update", schedule_id: scheduleId, enabled: true })).schedule;
  }

  /**
   * Let YOLO approve a schedule's runs, or stop it (the `schedules` extension). Switching it on needs
   * the master secret: a paired device's request rejects with `bad_request`.
   */
  async setScheduleAutoApprove(scheduleId: string, autoApprove: boolean): Promise<Schedule> {
    return (
      await this.request({ type: "schedule.update", schedule_id: scheduleId, auto_approve: autoApprove })
    ).schedule;
  }

  /**
   * `tool.get` (the `activity` extension): the latest state of one recorded tool call of a
   * conversation, with its detail (`kind`, `title`, `locations`, `content`: diffs, output), also of
   * older runs. Rejects with `not_found` for a call the conversation does not have.
   */
  getTool(conversationId: string, toolCallId: string): Promise<ServerMessageOf<"tool.event">> {
    return this.request({ type: "tool.get", conversation_id: conversationId, tool_call_id: toolCallId });
  }

  /**
   * `modes.list` (the `modes` extension): the modes the conversation's agent offers (`auto_approves`:
   * it runs tools without asking in that mode) and the one the conversation is in
   * (`current_mode_id`, null when unknown). An agent without modes gives an empty list. Answered from
   * what the server last knew when the conversation's agent is not running: it never starts one.
   */
  listModes(conversationId: string): Promise<ServerMessageOf<"modes.snapshot">> {
    return this.request({ type: "modes.list", conversation_id: conversationId });
  }

  /**
   * `mode.set` (the `modes` extension): put the conversation in one of its agent's modes, at once when
   * its session is open, else from its next turn; the choice is the conversation's and survives agent
   * restarts. Resolves with the `mode.changed` reply; every other `modes` connection gets the same
   * event without `request_id` (subscribe with `on("mode.changed", …)`, which also reports the agent
   * changing mode by itself). Rejects with `bad_request` for a mode the agent does not offer or
   * refuses (the agent's words).
   */
  setMode(conversationId: string, modeId: string): Promise<ServerMessageOf<"mode.changed">> {
    return this.request({ type: "mode.set", conversation_id: conversationId, mode_id: modeId });
  }

  /**
   * `commands.list` (the `modes` extension): the slash commands the conversation's agent accepts, as it
   * last announced them (`hint`: what to type after the name, or null). A command runs as an ordinary
   * message whose text starts with `/name`. A new list reaches `on("commands.snapshot", …)` without
   * `request_id` whenever the agent announces one.
   */
  async listCommands(conversationId: string): Promise<ServerMessageOf<"commands.snapshot">["commands"]> {
    return (await this.request({ type: "commands.list", conversation_id: conversationId })).commands;
  }

  /**
   * `conversation.list`: the conversations, with the `inbox` extension's `status`, `pending`, `unread`,
   * `preview` and `archived` on each entry when it is enabled, and the `workspaces` extension's
   * `agent_id`, `workspace_id` and `branch`. On an `inbox` connection the list holds the unarchived
   * conversations, or only the archived ones with `archived: true`; `agentId` / `workspaceId` (with
   * `workspaces`) keep one agent's or one workspace's. A filter of a feature the server did not enable
   * is ignored by it (every conversation is listed).
   */
  async listConversations(options: ListConversationsOptions = {}): Promise<ConversationEntry[]> {
    return (
      await this.request({
        type: "conversation.list",
        ...(options.archived ? { archived: true } : {}),
        ...(options.agentId === undefined ? {} : { agent_id: options.agentId }),
        ...(options.workspaceId === undefined ? {} : { workspace_id: options.workspaceId }),
      })
    ).conversations;
  }

  /**
   * `conversation.create`: a new conversation, with the `workspaces` extension in the agent and
   * workspace given (see {@link CreateConversationOptions} for the defaults), in a git worktree of its
   * own with `worktree: true`. Rejects with `bad_request` naming the field for an unknown ID, an agent
   * not allowed in that workspace, or a worktree outside a git repository (nothing is created).
   */
  createConversation(
    options: CreateConversationOptions = {},
  ): Promise<ServerMessageOf<"conversation.created">> {
    return this.request({
      type: "conversation.create",
      ...(options.name === undefined ? {} : { name: options.name }),
      ...(options.agentId === undefined ? {} : { agent_id: options.agentId }),
      ...(options.workspaceId === undefined ? {} : { workspace_id: options.workspaceId }),
      ...(options.worktree === undefined ? {} : { worktree: options.worktree }),
      ...(options.clientMessageId === undefined ? {} : { client_message_id: options.clientMessageId }),
    });
  }

  /**
   * `agents.list` (the `workspaces` extension): the agents the server runs, the default first, each
   * with its `status` (`idle` until first used, `starting`, `ready`, `failed`). A status change reaches
   * `on("agents.changed", …)`; it is not replayed after a drop, so list again after a reconnect.
   */
  async listAgents(): Promise<Agent[]> {
    return (await this.request({ type: "agents.list" })).agents;
  }

  /**
   * `workspaces.list` (the `workspaces` extension): the workspaces the server offers, by ID and name
   * (never a path), each with the agents allowed there (its default first) and whether it is a git
   * repository (`git`: a worktree is possible).
   */
  async listWorkspaces(): Promise<Workspace[]> {
    return (await this.request({ type: "workspaces.list" })).workspaces;
  }

  /**
   * `models.list`: the providers and models of a conversation's agent (`conversationId`), or of an
   * agent's global scope (`agentId`, the `workspaces` extension; default: the default agent).
   */
  listModels(options: SettingScopeOptions = {}): Promise<ServerMessageOf<"models.snapshot">> {
    return this.request({ type: "models.list", ...scopeFields(options) });
  }

  /** `models.current`: the current model of a conversation, or of an agent's global scope. */
  currentModel(options: SettingScopeOptions = {}): Promise<ServerMessageOf<"model.current">> {
    return this.request({ type: "models.current", ...scopeFields(options) });
  }

  /**
   * `model.set`: a conversation's override (`conversationId`), or the global default of an agent
   * (`agentId`, `workspaces`; default: the default agent). Every client hears `model.changed`.
   */
  setModel(
    model: string,
    options: SettingScopeOptions & { provider?: string } = {},
  ): Promise<ServerMessageOf<"model.changed">> {
    return this.request({
      type: "model.set",
      model,
      ...(options.provider === undefined ? {} : { provider: options.provider }),
      ...scopeFields(options),
    });
  }

  /** `reasoning.current`: the reasoning effort of a conversation, or of an agent's global scope. */
  currentReasoning(options: SettingScopeOptions = {}): Promise<ServerMessageOf<"reasoning.snapshot">> {
    return this.request({ type: "reasoning.current", ...scopeFields(options) });
  }

  /** `reasoning.set`: the reasoning effort of a conversation, or an agent's global one (`none`: off). */
  setReasoning(
    effort: ReasoningEffort,
    options: SettingScopeOptions = {},
  ): Promise<ServerMessageOf<"reasoning.changed">> {
    return this.request({ type: "reasoning.set", effort, ...scopeFields(options) });
  }

  /**
   * `changes.list` (the `changes` extension): what the conversation changed in its git repository
   * against `base` (the commit it started from), file by file with line counts; at most 1,000 files
   * (`truncated` past that). Without a worktree the list is of the shared working tree, so it includes
   * others' changes in that directory. Rejects with `not_implemented` when the conversation is not in
   * a git repository. `on("changes.changed", …)` hears the totals move at the end of a run.
   */
  listChanges(conversationId: string): Promise<ChangesSnapshot> {
    return this.request({ type: "changes.list", conversation_id: conversationId });
  }

  /**
   * `changes.diff` (the `changes` extension): one changed file's unified diff against the base, by the
   * `file_id` {@link listChanges} gave (`patch` null for a binary file, `truncated` past 256 KiB).
   * Rejects with `not_found` once that file no longer differs from the base (list again).
   */
  diffChange(conversationId: string, fileId: string): Promise<ChangedFilePatch> {
    return this.request({ type: "changes.diff", conversation_id: conversationId, file_id: fileId });
  }

  /**
   * `conversation.read` (the `inbox` extension): mark the conversation read for this reader (this
   * secret: the master secret or one paired device) up to `messageId` (an `m<n>` ID of its history;
   * default: the latest). Resolves with its new list state; the reader's other connections get the
   * same `conversation.status`.
   */
  markRead(conversationId: string, messageId?: string): Promise<InboxStatus> {
    return this.request({
      type: "conversation.read",
      conversation_id: conversationId,
      ...(messageId === undefined ? {} : { message_id: messageId }),
    });
  }

  /**
   * `conversation.archive` (the `inbox` extension): archive (`true`) or unarchive a conversation, for
   * every reader. Resolves with its new list state; every other `inbox` connection gets it too.
   */
  archive(conversationId: string, archived: boolean): Promise<InboxStatus> {
    return this.request({ type: "conversation.archive", conversation_id: conversationId, archived });
  }

  /**
   * `conversation.search` (the `inbox` extension): full-text search over every message of every
   * conversation, archived ones too, newest first. `query` is 1..200 characters in SQLite FTS5's
   * language (a query it cannot parse is searched as plain words); `limit` 1..50, default 20.
   */
  async search(query: string, options: { limit?: number } = {}): Promise<SearchHit[]> {
    return (
      await this.request({
        type: "conversation.search",
        query,
        ...(options.limit === undefined ? {} : { limit: options.limit }),
      })
    ).results;
  }

  /** Subscribe to server frames of one type (`"*"` for all). Returns the unsubscribe function. */
  on<K extends keyof FrameEvents>(type: K, handler: (message: FrameEvents[K]) => void): () => void {
    return this.frames.on(type, handler);
  }

  /** Subscribe to connection state changes. */
  onState(handler: (state: ConnectionState) => void): () => void {
    return this.connection.onState(handler);
  }

  /** Subscribe to the snapshots re-fetched after each reconnect (see {@link follow} and {@link ResyncResult}). */
  onResync(handler: (snapshots: ResyncResult) => void): () => void {
    return this.lifecycle.on("resync", handler);
  }

  /** Subscribe to frames the server sent that fail `@pheby/protocol` validation. */
  onInvalidFrame(handler: (frame: InvalidFrame) => void): () => void {
    return this.lifecycle.on("invalidFrame", handler);
  }

  /**
   * Resolve with the next frame of `type` that matches `predicate`; rejects
   * with `timeout` after `timeoutMs` (default: the request timeout).
   */
  next<K extends keyof FrameEvents>(
    type: K,
    predicate: (message: FrameEvents[K]) => boolean = () => true,
    timeoutMs = this.options.requestTimeoutMs ?? 30_000,
  ): Promise<FrameEvents[K]> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        off();
        reject(new PhebyError("timeout", `no ${String(type)} within ${timeoutMs} ms`));
      }, timeoutMs);
      const off = this.on(type, (message) => {
        if (!predicate(message)) return;
        clearTimeout(timer);
        off();
        resolve(message);
      });
    });
  }

  /**
   * Follow a conversation: after every reconnect it is re-opened (with `limit`; in the order
   * followed): with `resume` from the last `seq` handled, so its missed events reach handlers as if
   * never missed; otherwise, or when the server can no longer replay them, its snapshot is in the
   * {@link onResync} result, so the app can replace its local state, as the protocol's reconnect
   * procedure says.
   */
  follow(conversationId: string, limit?: number): void {
    this.followed.set(conversationId, limit);
  }

  /** Stop following a conversation. */
  unfollow(conversationId: string): void {
    this.followed.delete(conversationId);
  }

  /** Whether a conversation is followed: one found deleted when it was re-opened is no longer. */
  isFollowing(conversationId: string): boolean {
    return this.followed.has(conversationId);
  }

  /** The last `seq` handled for a conversation (`resume`): what a re-open after a drop resumes from. */
  position(conversationId: string): number | undefined {
    return this.resume?.position(conversationId);
  }

  /**
   * Re-open every followed conversation now (with `resume`, from their last `seq`; their events are
   * held back until each answer, whose replay carries them) and return the snapshots, also delivered
   * to {@link onResync}; a resumed conversation is not among them (see {@link ResyncResult}). A
   * conversation deleted meanwhile is dropped from the followed set. Runs by itself after each reconnect.
   */
  resync(): Promise<ResyncResult> {
    return this.resyncOn(false);
  }

  /**
   * {@link resync}; `recovering`: the catch-up after a reconnect. When a re-open fails on a live
   * connection (a timeout, a server error), that connection is closed before the conversations stop
   * being held back, so the next one catches them up from where they were instead of leaving a gap.
   */
  private async resyncOn(recovering: boolean): Promise<ResyncResult> {
    const link = this.connection.current;
    if (!link) throw new PhebyError("connection_closed", "not connected");
    const ids = [...this.followed.keys()];
    const resume = link.resume ? this.resume : undefined;
    const since = resume?.reopenFrom(ids) ?? new Map<string, number | undefined>();
    const result: ResyncResult = new Map();
    for (const id of ids) {
      const limit = this.followed.get(id);
      const from = since.get(id);
      try {
        const answer = await this.requests.send(
          this.requests.frameOf({
            type: "conversation.open",
            request_id: this.requests.newId(RESYNC_REQUEST_PREFIX),
            conversation_id: id,
            ...(limit === undefined ? {} : { limit }),
            ...(from === undefined ? {} : { since_seq: from }),
          }),
          link.socket,
        );
        if (answer.type === "conversation.history") result.set(id, answer);
      } catch (err) {
        const code = err instanceof PhebyError ? err.code : undefined;
        if (recovering && code !== "conversation_not_found" && code !== "connection_closed")
          link.socket.close(CLOSE_CODES.normal, "catch-up failed");
        resume?.synced(id);
        if (code !== "conversation_not_found") {
          for (const rest of ids) resume?.synced(rest);
          throw err;
        }
        this.followed.delete(id);
      }
    }
    this.lifecycle.emit("resync", result);
    return result;
  }

  /** One frame of the current link: decode, enable extensions at its `ready`, extensions, reply, handlers. */
  private onFrame(link: Link, raw: string): void {
    const decoded = decodeServerFrame(raw);
    if (!decoded.ok) {
      this.lifecycle.emit("invalidFrame", { raw, error: decoded.error });
      return;
    }
    const match = this.requests.match(decoded.message, link.socket);
    if (match && isReadyOf(link, decoded.message)) this.authenticated(link, decoded.message);
    let message: ServerMessage | undefined = decoded.message;
    for (const extension of link.extensions) {
      if (!message) break;
      message = extension.onFrame ? extension.onFrame(message, link, match !== undefined) : message;
    }
    if (match) this.requests.settle(match, message ?? decoded.message);
    // An extension may keep a frame from handlers (a repeat, a frame a replay brings again, a delta
    // that cannot be stitched); its request still gets it.
    if (!message) return;
    this.frames.emit(message.type, message as never);
    this.frames.emit("*", message);
  }

  /** `ready` answered the link's hello: enable its extensions before its next frame. */
  private authenticated(link: Link, ready: ServerMessageOf<"ready">): void {
    link.features = ready.features ?? [];
    link.extensions = this.extensions.filter((e) => link.features.includes(e.feature));
    link.ready = true;
    this.featuresValue = link.features;
    this.vapidKey = ready.push?.vapid_public_key;
    // From now on the followed conversations' events wait for their re-open (resume's catch-up).
    if (link.reconnected && link.resume) this.resume?.catchUp(this.followed.keys());
    this.recovering = link.reconnected;
    for (const extension of link.extensions) extension.onConnected?.(link, link.reconnected);
  }

  /** A link is open: after a reconnect, catch up the followed conversations first; then send the queue. */
  private onOpened(link: Link): void {
    if (!link.reconnected) {
      this.requests.flush(link.socket, link.resume);
      return;
    }
    void (async () => {
      try {
        await this.resyncOn(true);
      } catch {
        // The connection dropped again (or a re-open failed): the next connection recovers.
      }
      if (this.connection.current !== link) return;
      this.recovering = false;
      this.requests.flush(link.socket, link.resume);
    })();
  }
}
