import { createECDH } from "node:crypto";
import { type ClientMessageOf, PUSH_EVENT_KINDS, type ServerMessageOf } from "@pheby/protocol";
import type { Logger } from "pino";
import { deviceIdOf, OWNER_READER, type Principal } from "../auth/principal.js";
import { ProtocolError } from "../errors.js";
import type { Outbox, Peer } from "../outbox/outbox.js";
import type { NewPushSubscription } from "../store/push.js";
import type { Store } from "../store/store.js";
import { newId } from "../util/ids.js";
import { type Clock, iso } from "../util/time.js";
import { checkEndpoint, type EndpointPolicy, EndpointRefused, type Resolve } from "./address.js";
import { originOf, PushDelivery, type RetryPolicy } from "./delivery.js";
import { PushNotifier, type RunEnd } from "./notifier.js";
import { testPush } from "./payload.js";
import { Presence, type PresenceState } from "./presence.js";
import { PushSender } from "./sender.js";
import { loadOrCreateVapidKeys } from "./vapid.js";

/** Push settings of the server (see `PhebyServerOptions.push`). */
export interface PushOptions {
  /** Text in push payloads (`PHEBY_PUSH_PREVIEW`, default true); false sends ids only. */
  preview?: boolean;
  /** Allow plain `http` and private, loopback and link-local endpoints (`PHEBY_PUSH_ALLOW_PRIVATE`, default false). */
  allowPrivate?: boolean;
  /** The VAPID `sub` contact: a `mailto:` or `https:` URL (default {@link DEFAULT_PUSH_SUBJECT}). */
  subject?: string;
  /** Per-request deadline in ms (default 10,000). */
  timeoutMs?: number;
  /** Retries of 5xx, timeouts and 429 (default: 5 attempts from 1 s, doubling, at most 5 min apart). */
  retry?: RetryPolicy;
  /** Resolver for endpoint host names (tests play DNS rebinding with it). */
  resolve?: Resolve;
}

/**
 * What `push.test` and `push.list` say of any failed delivery. A subscription's endpoint is any
 * public URL its client chose, so telling the client the HTTP status or network error of an
 * attempt would make the server a port scanner of other hosts, seen from its own network.
 */
export const NOT_DELIVERED = "not delivered";

/** The VAPID contact when the operator names none: the project, so a push service can find who sends. */
export const DEFAULT_PUSH_SUBJECT = "https://github.com/pheby/pheby";

/** What {@link PushService} needs from the server. */
export interface PushServiceDeps {
  dataDir: string;
  store: Store;
  clock: Clock;
  log: Logger;
  /** The connections still authenticated (the Fanout's peers), for presence. */
  connected: () => Iterable<Peer>;
}

/** A `push.subscribe` whose endpoint and keys passed the checks, ready to store. */
export type CheckedSubscription = Omit<NewPushSubscription, "id" | "device_id">;

/** Decode a base64url key (padding tolerated); undefined when it is not base64url. */
function keyBytes(value: string): Buffer | undefined {
  const bare = value.replace(/=+$/, "");
  return /^[A-Za-z0-9_-]*$/.test(bare) ? Buffer.from(bare, "base64url") : undefined;
}

/**
 * The `push` extension on the server: the VAPID key pair, subscriptions, the notifier (an
 * Outbox around the Fanout), presence, and the requests `push.*` / `presence`.
 */
export class PushService {
  readonly vapidPublicKey: string;
  readonly presence: Presence;
  readonly #deps: PushServiceDeps;
  readonly #policy: EndpointPolicy;
  readonly #resolve: Resolve | undefined;
  readonly #sender: PushSender;
  readonly #delivery: PushDelivery;
  #notifier: PushNotifier | undefined;
  readonly #preview: boolean;

  constructor(deps: PushServiceDeps, options: PushOptions = {}) {
    this.#deps = deps;
    const vapid = loadOrCreateVapidKeys(deps.dataDir);
    this.vapidPublicKey = vapid.publicKey;
    this.#policy = { allowPrivate: options.allowPrivate ?? false };
    this.#resolve = options.resolve;
    this.#preview = options.preview ?? true;
    this.#sender = new PushSender({
      vapid,
      subject: options.subject ?? DEFAULT_PUSH_SUBJECT,
      policy: this.#policy,
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
      ...(options.resolve === undefined ? {} : { resolve: options.resolve }),
    });
    this.#delivery = new PushDelivery({
      sender: this.#sender,
      store: deps.store.push,
      clock: deps.clock,
      log: deps.log,
      ...(options.retry === undefined ? {} : { retry: options.retry }),
    });
    this.presence = new Presence(deps.connected);
  }

  /** Wrap the outbox the core writes to: events reach `inner` unchanged, then become pushes. */
  wrap(inner: Outbox): Outbox {
    this.#notifier = new PushNotifier(inner, {
      store: this.#deps.store.push,
      delivery: this.#delivery,
      presence: this.presence,
      clock: this.#deps.clock,
      log: this.#deps.log,
      preview: this.#preview,
      conversationName: (id) => this.#deps.store.getConversation(id)?.name,
      unread: (deviceId) => this.#deps.store.inbox.unreadTotal(deviceId ?? OWNER_READER),
    });
    return this.#notifier;
  }

  /** A run ended (the engine's `finished` run event): `run_finished` or `message` pushes. */
  runFinished(run: RunEnd): void {
    this.#notifier?.runFinished(run);
  }

  /**
   * `push.subscribe`, first half: the endpoint must pass the SSRF rule (`bad_request` otherwise,
   * without echoing it) and the keys must be a P-256 point and a 16-byte secret. It awaits the
   * endpoint's name resolution, so the caller checks its principal again before {@link store}.
   */
  async check(msg: ClientMessageOf<"push.subscribe">): Promise<CheckedSubscription> {
    try {
      await checkEndpoint(msg.endpoint, this.#policy, this.#resolve);
    } catch (err) {
      if (err instanceof EndpointRefused) throw new ProtocolError("bad_request", err.message);
      throw err;
    }
    const p256dh = keyBytes(msg.keys.p256dh);
    const auth = keyBytes(msg.keys.auth);
    if (!p256dh || !isP256Point(p256dh))
      throw new ProtocolError("bad_request", "keys.p256dh: not a P-256 public key");
    if (auth?.length !== 16) throw new ProtocolError("bad_request", "keys.auth: must be 16 bytes");
    return {
      endpoint: msg.endpoint,
      p256dh: p256dh.toString("base64url"),
      auth: auth.toString("base64url"),
      device_name: msg.device_name ?? null,
      events: msg.events ?? PUSH_EVENT_KINDS,
    };
  }

  /**
   * `push.subscribe`, second half: store the checked subscription under `principal`; returns its
   * id. The same endpoint again updates its subscription (same id). The row's device is a foreign
   * key: a device deleted in the meantime makes this throw rather than store an orphan.
   */
  store(checked: CheckedSubscription, principal: Principal | null): string {
    const { row, evicted } = this.#deps.store.push.subscribe(
      { ...checked, id: newId(), device_id: deviceIdOf(principal) },
      this.#deps.clock.now(),
    );
    this.#deps.log.info(
      { subscription: row.id, origin: originOf(row.endpoint), evicted: evicted.length },
      "push subscription stored",
    );
    return row.id;
  }

  /** `push.unsubscribe`: a subscription this credential may see, else `not_found`. */
  unsubscribe(subscriptionId: string, principal: Principal | null): void {
    this.#own(subscriptionId, principal);
    this.#deps.store.push.remove(subscriptionId);
  }

  /** `push.list`: the subscriptions this credential may see (the owner: all), oldest first. */
  list(principal: Principal | null): ServerMessageOf<"push.subscriptions">["subscriptions"] {
    const rows = this.#deps.store.push.list(deviceIdOf(principal) ?? undefined);
    return rows.map((row) => ({
      subscription_id: row.id,
      device_name: row.device_name,
      endpoint_origin: originOf(row.endpoint),
      events: row.events as ServerMessageOf<"push.subscriptions">["subscriptions"][number]["events"],
      created_at: iso(row.created_at),
      last_success_at: row.last_success_at === null ? null : iso(row.last_success_at),
      // An error older than the last success is history: the protocol shows the current state,
      // without what the failure was (NOT_DELIVERED).
      last_error:
        row.last_error !== null &&
        (row.last_success_at === null || (row.last_error_at ?? 0) > row.last_success_at)
          ? NOT_DELIVERED
          : null,
    }));
  }

  /**
   * `push.test`: one attempt, answered with whether it was delivered and nothing more: no status,
   * no network error (see {@link NOT_DELIVERED}). The server's log has the details.
   */
  async test(subscriptionId: string, principal: Principal | null): Promise<ServerMessageOf<"push.tested">> {
    const sub = this.#own(subscriptionId, principal);
    const notifier = this.#notifier;
    if (!notifier) throw new Error("push service not wired to an outbox");
    const result = await notifier.send(sub, testPush(sub.id, this.#deps.clock.now()), { once: true });
    const ok = result.outcome === "delivered";
    return {
      type: "push.tested",
      subscription_id: sub.id,
      ok,
      status: null,
      error: ok ? null : NOT_DELIVERED,
    };
  }

  /** `presence`: what this connection's UI shows now. */
  setPresence(connection: Peer, msg: ClientMessageOf<"presence">): void {
    const state: PresenceState = { state: msg.state };
    if (msg.conversation_id !== undefined) state.conversationId = msg.conversation_id;
    this.presence.update(connection, state);
  }

  /** Stop sending: requests in flight are aborted, queues dropped. */
  async close(): Promise<void> {
    await this.#delivery.close();
    this.#sender.close();
  }

  /** Let queued pushes finish (tests, benchmarks). */
  idle(): Promise<void> {
    return this.#delivery.idle();
  }

  /** A subscription `principal` may see (the owner: any; a device: its own), else `not_found`. */
  #own(subscriptionId: string, principal: Principal | null) {
    const row = this.#deps.store.push.get(subscriptionId);
    const device = deviceIdOf(principal);
    if (!row || (device !== null && row.device_id !== device)) {
      throw new ProtocolError("not_found", "No such push subscription");
    }
    return row;
  }
}

/** An uncompressed point on P-256 (what RFC 8291 needs as the receiver's key). */
function isP256Point(bytes: Buffer): boolean {
  if (bytes.length !== 65 || bytes[0] !== 4) return false;
  try {
    const ecdh = createECDH("prime256v1");
    ecdh.generateKeys();
    ecdh.computeSecret(bytes);
    return true;
  } catch {
    return false;
  }
}
