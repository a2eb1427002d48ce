import {
  applyDelta,
  CLOSE_CODES,
  type ClientMessageInput,
  decodeServerFrame,
  FEATURE_DELTA_APPEND,
  FEATURE_PUSH,
  FEATURE_QUEUE,
  FEATURE_RESUME,
  isReplyType,
  PROTOCOL_VERSION,
  type PresenceState,
  type PushEventKind,
  type ReplyOf,
  type RequestType,
  type Schedule,
  type ServerMessage,
  type ServerMessageOf,
  type ServerMessageType,
} from "@pheby/protocol";
import { type BackoffOptions, backoffDelay, DEFAULT_MAX_DELAY_MS } from "./backoff.js";
import { Emitter } from "./emitter.js";
import { PhebyError } from "./errors.js";
import { downloadAttachment, type UploadSource, uploadAttachment } from "./files.js";
import { newClientMessageId, Positions } from "./resume.js";
import { defaultWebSocket, type WebSocketConstructor, type WebSocketLike } from "./socket.js";
import { frameText, lockoutError, type TransportFailure, transportFailure } from "./transport.js";

/** Connection lifecycle states. `auth_failed` is final until {@link PhebyClient.connect} is called again. */
export type ConnectionState = "idle" | "connecting" | "open" | "reconnecting" | "auth_failed" | "closed";

/** Options of {@link PhebyClient}. */
export interface PhebyClientOptions {
  /** WebSocket URL, e.g. `wss://pheby.example.com/ws` or `ws://127.0.0.1:8620/ws`. */
  url: string;
  /** The master secret, or a device secret (the `devices` extension: see {@link pairDevice}). Sent once, in `hello`. */
  secret: string;
  /** WebSocket implementation; defaults to the global one, else the `ws` package. */
  WebSocket?: WebSocketConstructor;
  /** Automatic reconnect with exponential backoff and jitter; `false` disables it. Default on. */
  reconnect?: false | BackoffOptions;
  /** How long a request waits for its reply (default 30 s). */
  requestTimeoutMs?: number;
  /** fetch implementation for uploads and downloads (default: the global one). */
  fetch?: typeof fetch;
  /** Application-level `ping` interval (default 25 s; 0 disables). A missed `pong` forces a reconnect. */
  pingIntervalMs?: number;
  /**
   * Ask the server for append deltas (the `delta.append` extension: each `message.delta` carries only
   * the new text, so a long answer costs about its length on the wire). Default on. Either way the
   * client stitches them, and `message.delta` handlers receive the cumulative text, as in v1.
   */
  appendDeltas?: boolean;
  /**
   * Ask for the `resume` extension (default on). With a server that enables it, a reconnect
   * re-opens each followed conversation from the last `seq` handled and is sent only what was
   * missed (`conversation.resumed`, then those events), `chat.send` and `conversation.create` get a
   * `client_message_id` when they have none, a send whose reply was lost in a drop is sent again
   * after the reconnect (the server answers a repeat with the first outcome), and sends made while
   * disconnected wait in an outbox until the connection is back.
   */
  resume?: boolean;
  /**
   * Ask for the `queue` extension (default on): `chat.send { queue: true }` during a run is answered
   * `run.queued` and starts when the run ends; `queue.changed` events tell what is waiting.
   */
  queue?: boolean;
  /**
   * More Pheby extensions to ask for in `hello`, e.g. `["devices"]` to pair and manage devices
   * ({@link PhebyClient.createPairing}) or `[FEATURE_SCHEDULES, FEATURE_EXPIRY]`. Those the server
   * enabled are in {@link PhebyClient.features}; their requests then work through `request()` and
   * their events reach `on()` handlers. Default none.
   */
  features?: readonly string[];
  /**
   * Ask for the `push` extension (Web Push notifications: {@link PhebyClient.subscribePush},
   * {@link PhebyClient.presence}). Default on; it adds no events to the connection.
   */
  push?: boolean;
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
 * What `conversation.open` answered for each followed conversation after a (re)connect: a
 * snapshot (`conversation.history`: replace local state with it), or, with `resume`,
 * `conversation.resumed` (keep local state: the missed events were delivered to handlers).
 */
export type ResyncResult = Map<
  string,
  ServerMessageOf<"conversation.history"> | ServerMessageOf<"conversation.resumed">
>;

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

type FrameEvents = { [T in ServerMessageType]: ServerMessageOf<T> } & { "*": ServerMessage };
type LifecycleEvents = {
  state: ConnectionState;
  resync: ResyncResult;
  invalidFrame: InvalidFrame;
};

/** A request: its frame (with its `request_id`), who waits for the reply, and what to do on a drop. */
interface Outgoing {
  frame: { type: RequestType; request_id: string } & Record<string, unknown>;
  timeoutMs: number | undefined;
  resolve(message: ServerMessage): void;
  reject(error: PhebyError): void;
  /** A send with a `client_message_id` on a `resume` connection: safe to send again after a drop. */
  retry: boolean;
  /** Sent at least once (a send queued while disconnected is not, and is safe for any server). */
  sent: boolean;
}

interface Pending extends Outgoing {
  timer: ReturnType<typeof setTimeout>;
}

/** The requests a `client_message_id` makes safe to send again. */
const IDEMPOTENT: ReadonlySet<string> = new Set(["chat.send", "conversation.create"]);

/**
 * Close codes after which reconnecting cannot help (docs/protocol.md, close codes): a wrong secret
 * and a protocol version the server does not speak. A lockout (4429) only means "wait"; every other
 * close is reconnected with backoff.
 */
const FINAL_CLOSE_CODES: ReadonlySet<number> = new Set([
  CLOSE_CODES.unauthorized,
  CLOSE_CODES.versionMismatch,
]);
const FINAL_ERROR_CODES: ReadonlySet<string> = new Set(["unauthorized", "version_mismatch"]);

/**
 * A typed Pheby Protocol v1 client.
 *
 * ```ts
 * const client = new PhebyClient({ url: "ws://127.0.0.1:8620/ws", secret });
 * await client.connect();
 * const { conversation_id } = await client.request({ type: "conversation.create", name: "Hi" });
 * client.on("message.delta", (m) => render(m.text)); // always the whole draft so far
 * await client.request({ type: "chat.send", conversation_id, text: "Hello" });
 * ```
 */
export class PhebyClient {
  private readonly frames = new Emitter<FrameEvents>();
  private readonly lifecycle = new Emitter<LifecycleEvents>();
  private readonly pending = new Map<string, Pending>();
  /** Sends waiting for a connection, in order (`resume`). */
  private readonly outbox: Outgoing[] = [];
  private readonly followed = new Map<string, number | undefined>();
  private readonly positions = new Positions();
  /**
   * The positions of the followed conversations when a reconnect's `ready` arrived, from which
   * they are re-opened: events that arrive before the re-open is answered are held back from then.
   */
  private caughtUp: Map<string, number | undefined> | undefined;
  private featuresValue: readonly string[] = [];
  private vapidKey: string | undefined;
  /** The last presence this client said, repeated on every new connection (a new peer has none). */
  private lastPresence: { state: PresenceState; conversation_id?: string } | undefined;
  /** Draft text by message_id, stitched from append deltas; cleared per connection and at message.complete. */
  private readonly drafts = new Map<string, string>();
  private socket: WebSocketLike | undefined;
  private stateValue: ConnectionState = "idle";
  private nextId = 1;
  private attempt = 0;
  private userClosed = false;
  private everConnected = false;
  /** The wait the server asked for at its last lockout (`rate_limited`, 4429), until the next attempt. */
  private lockedOutFor: number | undefined;
  private reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  private pingTimer: ReturnType<typeof setInterval> | undefined;

  constructor(private readonly options: PhebyClientOptions) {}

  /** The current connection state. */
  get state(): ConnectionState {
    return this.stateValue;
  }

  /**
   * Open the socket and complete the handshake. Resolves with `ready`; rejects
   * with a {@link PhebyError} (`unauthorized`, `version_mismatch`, `rate_limited`,
   * `auth_timeout`, `connection_closed`). After success, drops are repaired
   * automatically unless `reconnect: false`: `unauthorized` and `version_mismatch`
   * (close 4401, 4426) stop reconnecting (`auth_failed`); a lockout (`rate_limited`,
   * close 4429) waits the `retryAfterMs` the server named, then tries again.
   */
  async connect(): Promise<ServerMessageOf<"ready">> {
    this.userClosed = false;
    clearTimeout(this.reconnectTimer);
    return this.open("connecting");
  }

  /** The Pheby extensions the server enabled on the current connection (`ready.features`; empty from a server without them). */
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
    this.lastPresence = {
      state,
      ...(conversationId === undefined ? {} : { conversation_id: conversationId }),
    };
    if (this.stateValue === "open" && this.featuresValue.includes(FEATURE_PUSH)) {
      this.send({ type: "presence", ...this.lastPresence });
    }
  }

  /** Close the connection for good (no reconnect). Pending requests and the outbox reject with `connection_closed`. */
  close(): void {
    this.userClosed = true;
    clearTimeout(this.reconnectTimer);
    const socket = this.socket;
    this.socket = undefined;
    socket?.close(CLOSE_CODES.normal, "client closed");
    this.teardown("closed");
    for (const out of this.outbox.splice(0)) out.reject(new PhebyError("connection_closed", "client closed"));
  }

  /**
   * Send a request and resolve with its direct reply ({@link ReplyTo}). A
   * `request_id` is filled in when absent; with `resume` (the default), a
   * `chat.send` or `conversation.create` without `client_message_id` gets one.
   * Rejects with a {@link PhebyError} carrying the server's error code.
   *
   * While the client is reconnecting after a drop, such a send waits in the
   * outbox and goes out once the connection is back (and, with `resume`, the
   * followed conversations are caught up); other requests reject with
   * `connection_closed`.
   */
  request<T extends RequestType, M extends ClientMessageInput<T> & { type: T }>(
    message: M,
    options: { timeoutMs?: number } = {},
  ): Promise<ReplyTo<M>> {
    const frame = this.frameOf(message);
    return new Promise<ServerMessage>((resolve, reject) => {
      const out: Outgoing = {
        frame,
        timeoutMs: options.timeoutMs,
        resolve,
        reject,
        retry: this.options.resume !== false && frame.client_message_id !== undefined,
        sent: false,
      };
      const socket = this.socket;
      if (socket && this.stateValue === "open") this.transmit(socket, out);
      else if (out.retry && this.willReconnect()) this.outbox.push(out);
      else reject(new PhebyError("connection_closed", "not connected"));
    }) as Promise<ReplyTo<M>>;
  }

  /** Send a frame without waiting for anything (e.g. to test a server with raw input). */
  send(frame: unknown): void {
    if (!this.socket || this.stateValue !== "open")
      throw new PhebyError("connection_closed", "not connected");
    this.socket.send(typeof frame === "string" ? frame : JSON.stringify(frame));
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

  /** Subscribe to server frames of one type (`"*"` for all). Returns the unsubscribe function. */
  on<K extends keyof FrameEvents>(type: K, handler: (message: FrameEvents[K]) => void): () => void {
    return this.frames.on(type, handler);
  }

  /** Subscribe to connection state changes. */
  onState(handler: (state: ConnectionState) => void): () => void {
    return this.lifecycle.on("state", handler);
  }

  /** Subscribe to the snapshots re-fetched after each reconnect (see {@link follow}). */
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
   * Follow a conversation: after every reconnect it is re-opened (with `limit`)
   * and the answer is delivered through {@link onResync} — the spec's
   * reconnect recovery in one call. With `resume`, it is re-opened from the
   * last `seq` handled: the missed events reach handlers as if never missed,
   * and the answer is `conversation.resumed`; when the server can no longer
   * replay them it is a fresh snapshot, as in v1.
   */
  follow(conversationId: string, limit?: number): void {
    this.followed.set(conversationId, limit);
  }

  /** Stop following a conversation. */
  unfollow(conversationId: string): void {
    this.followed.delete(conversationId);
  }

  /** The last `seq` handled for a conversation (`resume`): what a re-open after a drop resumes from. */
  position(conversationId: string): number | undefined {
    return this.positions.of(conversationId);
  }

  /**
   * Re-open every followed conversation now and return the answers. A
   * conversation deleted meanwhile is dropped from the followed set.
   */
  async resync(): Promise<ResyncResult> {
    const result: ResyncResult = new Map();
    const resume = this.featuresValue.includes(FEATURE_RESUME);
    // Each from where it was when the connection came back (caught at its `ready`, see onMessage).
    const caught = this.caughtUp;
    this.caughtUp = undefined;
    const followed = [...this.followed].map(([id, limit]) => ({
      id,
      limit,
      since: caught ? caught.get(id) : this.positions.of(id),
    }));
    if (resume && !caught) for (const { id } of followed) this.positions.syncing(id);
    for (const { id, limit, since } of followed) {
      try {
        const answer = await this.request({
          type: "conversation.open",
          conversation_id: id,
          ...(limit === undefined ? {} : { limit }),
          ...(resume && since !== undefined ? { since_seq: since } : {}),
        });
        result.set(id, answer);
      } catch (err) {
        this.positions.synced(id);
        if (err instanceof PhebyError && err.code === "conversation_not_found") this.followed.delete(id);
        else {
          for (const rest of followed) this.positions.synced(rest.id);
          throw err;
        }
      }
    }
    this.lifecycle.emit("resync", result);
    return result;
  }

  private setState(state: ConnectionState): void {
    if (this.stateValue === state) return;
    this.stateValue = state;
    this.lifecycle.emit("state", state);
  }

  private async open(state: "connecting" | "reconnecting"): Promise<ServerMessageOf<"ready">> {
    this.setState(state);
    const Ctor = this.options.WebSocket ?? (await defaultWebSocket());
    const socket = new Ctor(this.options.url);
    this.socket = socket;
    // A new connection starts every draft over: its first delta of each message has offset 0.
    this.drafts.clear();
    let failure: PhebyError | undefined;
    let opening = true;
    let transport: TransportFailure | undefined;
    let closed: { code: number; reason: string } | undefined;

    const opened = new Promise<void>((resolve, reject) => {
      socket.addEventListener("open", () => {
        opening = false;
        resolve();
      });
      socket.addEventListener("close", (event) => {
        closed = { code: event.code, reason: event.reason };
        this.lockedOutFor = lockoutError(closed)?.retryAfterMs ?? this.lockedOutFor;
        reject(
          failure ??
            (transport
              ? new PhebyError("connection_closed", transport.message, {
                  status: transport.status,
                  cause: transport.cause,
                })
              : new PhebyError(
                  "connection_closed",
                  opening
                    ? `closed (${event.code}) before the WebSocket to ${this.options.url} opened (the runtime does not say why)`
                    : `closed (${event.code}) before ready`,
                )),
        );
        this.onClose(socket, event.code);
      });
      // A close event follows; keep what the runtime says went wrong (Node does, browsers do not).
      socket.addEventListener("error", (event) => {
        if (opening) transport ??= transportFailure(event, this.options.url);
      });
    });
    socket.addEventListener("message", (event) => this.onMessage(socket, event.data));

    await opened;
    try {
      const ready = (await this.call(socket, {
        type: "hello",
        secret: this.options.secret,
        protocol_version: PROTOCOL_VERSION,
        ...this.helloFeatures(),
      })) as ServerMessageOf<"ready">;
      this.attempt = 0;
      this.featuresValue = ready.features ?? [];
      this.vapidKey = ready.push?.vapid_public_key;
      const reconnected = this.everConnected;
      this.everConnected = true;
      this.setState("open");
      this.startPing(socket);
      if (this.lastPresence && this.featuresValue.includes(FEATURE_PUSH)) {
        socket.send(JSON.stringify({ type: "presence", ...this.lastPresence }));
      }
      if (reconnected) void this.recover(socket);
      else this.flushOutbox(socket);
      return ready;
    } catch (err) {
      failure = err instanceof PhebyError ? err : new PhebyError("connection_closed", String(err));
      // A server refusing a locked-out address as the socket opens closes it 4429 before our hello is
      // answered: that close is the answer.
      if (failure.code === "connection_closed" && closed) failure = lockoutError(closed) ?? failure;
      // Before the close, this is what the next reconnect waits (the close reason may repeat it).
      if (failure.code === "rate_limited" && !closed) this.lockedOutFor = failure.retryAfterMs;
      if (FINAL_ERROR_CODES.has(failure.code)) this.setState("auth_failed");
      socket.close();
      throw failure;
    }
  }

  /** `hello.features`: the built-in extensions unless turned off, plus those asked for; absent when none. */
  private helloFeatures(): { features?: string[] } {
    const { appendDeltas, push, resume, queue } = this.options;
    const asked = [
      ...(appendDeltas === false ? [] : [FEATURE_DELTA_APPEND]),
      ...(push === false ? [] : [FEATURE_PUSH]),
      ...(resume === false ? [] : [FEATURE_RESUME]),
      ...(queue === false ? [] : [FEATURE_QUEUE]),
      ...(this.options.features ?? []),
    ];
    const features = asked.filter((f, i) => asked.indexOf(f) === i);
    return features.length === 0 ? {} : { features };
  }

  /** Whether a drop is repaired by a reconnect (so a send can wait for it). */
  private willReconnect(): boolean {
    return (
      !this.userClosed &&
      this.everConnected &&
      this.options.reconnect !== false &&
      this.stateValue !== "auth_failed" &&
      this.stateValue !== "closed"
    );
  }

  /** A request's frame: its `request_id`, and with `resume` a `client_message_id` on sends that lack one. */
  private frameOf(message: { type: RequestType } & Record<string, unknown>): Outgoing["frame"] {
    const frame: Outgoing["frame"] = {
      ...message,
      request_id: (message.request_id as string | undefined) ?? `r${this.nextId++}`,
    };
    if (
      this.options.resume !== false &&
      IDEMPOTENT.has(frame.type) &&
      frame.client_message_id === undefined
    ) {
      frame.client_message_id = newClientMessageId();
    }
    return frame;
  }

  /** A request of the client's own (hello, ping): never queued, never retried. */
  private call(
    socket: WebSocketLike,
    message: { type: RequestType } & Record<string, unknown>,
    timeoutMs?: number,
  ): Promise<ServerMessage> {
    return new Promise((resolve, reject) => {
      const frame = { ...message, request_id: `r${this.nextId++}` };
      this.transmit(socket, { frame, timeoutMs, resolve, reject, retry: false, sent: false });
    });
  }

  /** Send a request on `socket` and wait for its reply (until the request timeout). */
  private transmit(socket: WebSocketLike, out: Outgoing): void {
    const timeout = out.timeoutMs ?? this.options.requestTimeoutMs ?? 30_000;
    const requestId = out.frame.request_id;
    const timer = setTimeout(() => {
      this.pending.delete(requestId);
      out.reject(
        new PhebyError("timeout", `no reply to ${out.frame.type} within ${timeout} ms`, { requestId }),
      );
    }, timeout);
    out.sent = true;
    this.pending.set(requestId, { ...out, timer });
    socket.send(JSON.stringify(out.frame));
  }

  /** After a reconnect: catch up the followed conversations, then send what waited in the outbox. */
  private async recover(socket: WebSocketLike): Promise<void> {
    try {
      await this.resync();
    } catch {
      // The connection dropped again (or a re-open failed): the next connection recovers.
    }
    if (socket === this.socket && this.stateValue === "open") this.flushOutbox(socket);
  }

  /**
   * Send the outbox, in order. A send that already went out once is sent
   * again only to a `resume` connection, which answers a repeat with its
   * first outcome; any other server might do it twice.
   */
  private flushOutbox(socket: WebSocketLike): void {
    const resume = this.featuresValue.includes(FEATURE_RESUME);
    for (const out of this.outbox.splice(0)) {
      if (out.sent && !resume) {
        out.reject(
          new PhebyError(
            "connection_closed",
            "the connection dropped before the reply, and this server cannot say whether it was handled",
            { requestId: out.frame.request_id },
          ),
        );
      } else {
        this.transmit(socket, out);
      }
    }
  }

  private onMessage(socket: WebSocketLike, data: unknown): void {
    if (socket !== this.socket) return;
    const raw = frameText(data);
    const decoded = decodeServerFrame(raw);
    if (!decoded.ok) {
      this.lifecycle.emit("invalidFrame", { raw, error: decoded.error });
      return;
    }
    const message = this.stitch(decoded.message);
    if (!message) {
      this.lifecycle.emit("invalidFrame", {
        raw,
        error: {
          code: "bad_request",
          message: "message.delta offset is beyond the draft (a delta was missed)",
        },
      });
      return;
    }
    const requestId = (message as { request_id?: string }).request_id;
    const pending = requestId === undefined ? undefined : this.pending.get(requestId);
    const isReply =
      pending !== undefined && (message.type === "error" || isReplyType(pending.frame.type, message.type));
    if (isReply) {
      this.pending.delete(requestId!);
      clearTimeout(pending.timer);
      if (message.type === "error") {
        pending.reject(new PhebyError(message.error.code, message.error.message, { requestId: requestId! }));
      } else {
        pending.resolve(message);
      }
    }
    // A reconnect to a resume server: from now on, the followed conversations' events wait for their re-open.
    if (
      message.type === "ready" &&
      isReply &&
      this.everConnected &&
      message.features?.includes(FEATURE_RESUME)
    ) {
      this.caughtUp = new Map([...this.followed.keys()].map((id) => [id, this.positions.of(id)]));
      for (const id of this.followed.keys()) this.positions.syncing(id);
    }
    // Held back: an event the catch-up after a reconnect accounts for, or a repeat of one handled.
    if (!this.positions.accept(message, isReply)) return;
    this.frames.emit(message.type, message as never);
    this.frames.emit("*", message);
  }

  /**
   * Keep each draft and turn an append delta back into v1's cumulative form
   * (no `offset`), so handlers see the same frames whatever was negotiated.
   * Undefined for a delta whose offset lies beyond the draft we hold.
   */
  private stitch(message: ServerMessage): ServerMessage | undefined {
    switch (message.type) {
      case "message.delta": {
        const { offset, ...cumulative } = message;
        if (offset === undefined) {
          this.drafts.set(message.message_id, message.text);
          return message;
        }
        let text: string;
        try {
          text = applyDelta(this.drafts.get(message.message_id) ?? "", message);
        } catch {
          return undefined;
        }
        this.drafts.set(message.message_id, text);
        return { ...cumulative, text };
      }
      case "message.complete":
        this.drafts.delete(message.message_id);
        return message;
      case "conversation.history":
        // The snapshot's run text is the whole draft so far; later deltas continue from it.
        if (message.run) this.drafts.set(message.run.message_id, message.run.text);
        return message;
      default:
        return message;
    }
  }

  private onClose(socket: WebSocketLike, code: number): void {
    if (socket !== this.socket) return;
    this.socket = undefined;
    const final = FINAL_CLOSE_CODES.has(code) || this.stateValue === "auth_failed";
    // A send the server may have handled is kept for the next connection when it can ask again safely.
    const retain = !final && this.featuresValue.includes(FEATURE_RESUME) && this.willReconnect();
    this.teardown(final ? "auth_failed" : this.userClosed ? "closed" : this.stateValue, retain);
    if (this.userClosed || final || this.options.reconnect === false || !this.everConnected) {
      if (!final && !this.userClosed) this.setState("closed");
      return;
    }
    this.scheduleReconnect(code);
  }

  /** Reconnect after the backoff, or after the lockout's wait when the close (`closeCode`) was one. */
  private scheduleReconnect(closeCode: number): void {
    this.setState("reconnecting");
    const backoff = this.options.reconnect || {};
    let delay = backoffDelay(this.attempt++, backoff);
    if (this.lockedOutFor !== undefined || closeCode === CLOSE_CODES.lockedOut) {
      // Locked out: wait what the server said (or the backoff's cap when it said nothing). Trying
      // earlier only gets another 4429.
      delay = Math.max(delay, this.lockedOutFor ?? backoff.maxDelayMs ?? DEFAULT_MAX_DELAY_MS);
      this.lockedOutFor = undefined;
    }
    this.reconnectTimer = setTimeout(() => {
      // A failed attempt ends in a close event, and onClose schedules the next one.
      this.open("reconnecting").catch(() => undefined);
    }, delay);
  }

  private teardown(state: ConnectionState, retain = false): void {
    clearInterval(this.pingTimer);
    this.pingTimer = undefined;
    const retained: Outgoing[] = [];
    for (const [id, { timer, ...out }] of this.pending) {
      clearTimeout(timer);
      if (retain && out.retry) retained.push(out);
      else out.reject(new PhebyError("connection_closed", "connection closed", { requestId: id }));
    }
    this.pending.clear();
    // Sends whose reply was lost go first, in the order they were sent.
    this.outbox.unshift(...retained);
    this.setState(state);
  }

  private startPing(socket: WebSocketLike): void {
    const interval = this.options.pingIntervalMs ?? 25_000;
    if (interval <= 0) return;
    this.pingTimer = setInterval(() => {
      this.call(socket, { type: "ping" }, Math.min(interval, 10_000)).catch((err: PhebyError) => {
        // A missed pong means a dead path (e.g. a phone changing networks): force a reconnect.
        if (err.code === "timeout" && socket === this.socket)
          socket.close(CLOSE_CODES.normal, "ping timeout");
      });
    }, interval);
  }
}
