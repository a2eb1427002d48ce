import {
  CLOSE_CODES,
  type ClientMessage,
  type ClientMessageOf,
  type DecodeError,
  decodeClientFrame,
  type ErrorCode,
  LIMITS,
  PROTOCOL_VERSION,
  type RawFrame,
  type ServerMessage,
} from "@pheby/protocol";
import type { Logger } from "pino";
import { type Lockout, retryAfter } from "../auth/lockout.js";
import { type Authenticate, type Principal, principalLog } from "../auth/principal.js";
import type { Answer, ServerContext } from "../handlers/context.js";
import type { Dispatcher, Refusal } from "../handlers/index.js";
import type { Fanout } from "../outbox/fanout.js";
import { type Peer, type SendHint, sendReply } from "../outbox/outbox.js";
import { iso } from "../util/time.js";
import type { ConnectionExtension, HelloCredential } from "./extension.js";
import { negotiate } from "./features.js";
import type { PeerLink } from "./link.js";

/** What every connection needs, whatever its transport. */
export interface ConnectionSettings {
  /** Who a hello's secret authenticates (compared in constant time), or undefined. */
  authenticate: Authenticate;
  lockout: Lockout;
  authTimeoutMs: number;
  serverName: string;
}

/** The services connections work with. */
export interface ConnectionDeps {
  /** Handlers' services; `ctx.outbox` receives the events of handlers' answers. */
  ctx: ServerContext;
  dispatcher: Dispatcher;
  /** The registry of authenticated peers (the Fanout under any outbox wrapper). */
  fanout: Fanout;
  settings: ConnectionSettings;
  /**
   * The extensions this server offers (a hello may enable their features), with their hooks, in
   * the order their hooks run. An extension the operator turned off is not registered.
   */
  extensions: readonly ConnectionExtension[];
}

const NO_FEATURES: ReadonlySet<string> = new Set();
const encoder = new TextEncoder();

function frameBytes(data: RawFrame): number {
  return typeof data === "string" ? encoder.encode(data).byteLength : data.byteLength;
}

/** Where transports open a {@link Connection} for each connection they accept. */
export class Connections {
  readonly #deps: ConnectionDeps & { features: readonly string[] };

  constructor(deps: ConnectionDeps) {
    this.#deps = { ...deps, features: deps.extensions.map((e) => e.feature) };
  }

  /**
   * A transport accepted a connection. A locked-out address is refused at
   * once; otherwise the peer has `authTimeoutMs` to say hello.
   */
  open(link: PeerLink): Connection {
    return new Connection(link, this.#deps);
  }
}

/**
 * One peer's protocol connection over any {@link PeerLink}: the frame limit,
 * decoding, the handshake (hello/ready, auth timer, lockout, the extensions'
 * hooks), dispatch of requests, and the send path the Fanout uses once it is
 * authenticated. It is the only code that sends a handler's answer.
 */
export class Connection implements Peer {
  readonly id: number;
  features: ReadonlySet<string> = NO_FEATURES;
  principal: Principal | null = null;
  readonly #log: Logger;
  #authTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly link: PeerLink,
    private readonly deps: ConnectionDeps & { features: readonly string[] },
  ) {
    this.id = link.id;
    this.#log = deps.ctx.log;
    this.#log.debug({ conn: this.id, addr: link.address }, "connection open");
    if (this.#refuseIfLocked()) return;
    this.#authTimer = setTimeout(() => {
      if (this.principal || !this.link.open) return;
      this.#log.debug({ conn: this.id }, "auth timeout");
      this.error("auth_timeout", "No hello received in time");
      this.close(CLOSE_CODES.authTimeout, "auth timeout");
    }, deps.settings.authTimeoutMs);
  }

  /** Send one serialised frame (the Fanout's path, and this connection's own replies). */
  send(frame: string, hint: SendHint): void {
    if (!this.link.open) return;
    this.link.send(frame, hint);
    this.#log.debug({ conn: this.id, type: hint.type }, "frame out");
  }

  close(code: number, reason: string): void {
    this.link.close(code, reason);
  }

  /** The transport received one frame. */
  receive(data: RawFrame): void {
    if (!this.link.open) return;
    const size = frameBytes(data);
    if (size > LIMITS.frameBytes) {
      this.#log.debug({ conn: this.id, size }, "frame too large");
      this.error("too_large", `frame exceeds ${LIMITS.frameBytes} bytes`);
      this.close(CLOSE_CODES.messageTooBig, "frame too large");
      return;
    }
    // Extension requests and fields count only when this connection enabled their feature (for the
    // hello, which negotiates them, those this server supports): the decoder gates and strips them.
    const decoded = decodeClientFrame(data, {
      features: this.principal ? this.features : this.deps.features,
    });
    if (!this.principal) {
      this.#hello(decoded.ok ? decoded.message : undefined, decoded.ok ? undefined : decoded.error);
      return;
    }
    if (!decoded.ok) {
      const { error } = this.deps.dispatcher.rejected(this.deps.ctx, decoded.error);
      this.#log.debug({ conn: this.id, code: error.code }, "frame rejected");
      this.error(error.code, error.message, decoded.error.request_id);
      return;
    }
    this.#log.debug({ conn: this.id, type: decoded.message.type }, "frame in");
    void this.#dispatch(decoded.message);
  }

  /** The transport saw the connection end. */
  closed(code: number): void {
    clearTimeout(this.#authTimer);
    this.deps.fanout.remove(this);
    this.#log.debug({ conn: this.id, code }, "connection closed");
    if (this.principal) for (const ext of this.#enabled()) ext.closed?.(this);
  }

  /** Send one message to this peer only. */
  sendMessage(msg: ServerMessage): void {
    this.send(JSON.stringify(msg), { type: msg.type });
  }

  /** Send an `error` frame (echoing `requestId` when there is one). */
  error(code: ErrorCode, message: string, requestId?: string): void {
    this.sendMessage({
      type: "error",
      ...(requestId === undefined ? {} : { request_id: requestId }),
      error: { code, message },
      ts: iso(this.deps.ctx.clock.now()),
    });
  }

  #dispatch(msg: ClientMessage): Promise<void> {
    return this.deps.dispatcher.dispatch(this.deps.ctx, this, msg, (answer) =>
      this.#answer(msg.request_id, answer),
    );
  }

  /**
   * Send a handler's answer by its reply rule. This and the Fanout are the only places a
   * `request_id` is written: a direct reply here (then its replay, then its broadcast, as the
   * protocol's tables order them), a broadcast's through the event's `replyTo`.
   */
  #answer(requestId: string | undefined, answer: Answer | Refusal): void {
    if ("error" in answer) {
      this.error(answer.error.code, answer.error.message, requestId);
      return;
    }
    switch (answer.rule) {
      case "requester": {
        sendReply(this, requestId, answer.reply, this.#replyFields(answer.reply));
        for (const event of answer.replay ?? []) this.deps.fanout.publish(event, this);
        if (answer.broadcast) this.deps.ctx.outbox.publish(answer.broadcast);
        for (const event of answer.then ?? []) this.deps.ctx.outbox.publish(event);
        return;
      }
      case "broadcast":
      case "broadcast_all":
        // Without an event, the core publishes it itself with the origin the handler gave it.
        if ("event" in answer) {
          const replyTo = {
            peer: this,
            rule: answer.rule,
            ...(requestId === undefined ? {} : { requestId }),
          };
          this.deps.ctx.outbox.publish({ ...answer.event, replyTo });
        }
        return;
      case "none":
        return;
    }
  }

  /** The fields the extensions this connection enabled add to a direct reply, in their order. */
  #replyFields(reply: ServerMessage): Record<string, unknown> | undefined {
    let fields: Record<string, unknown> | undefined;
    for (const ext of this.#enabled()) {
      const more = ext.replyFields?.(this, reply);
      if (more) fields = { ...fields, ...more };
    }
    return fields;
  }

  /** The registered extensions this connection enabled, in their order. */
  *#enabled(): Iterable<ConnectionExtension> {
    for (const ext of this.deps.extensions) if (this.features.has(ext.feature)) yield ext;
  }

  /**
   * Refuse a connection whose address is locked out (`rate_limited`, 4429).
   * Checked when the connection opens and again at its first frame: sockets
   * opened before the lockout must not keep comparing secrets, so an address
   * gets exactly `maxFailures` comparisons per window however many it holds.
   */
  #refuseIfLocked(requestId?: string): boolean {
    const locked = this.deps.settings.lockout.remainingMs(this.link.address);
    if (locked <= 0) return false;
    this.#log.warn({ conn: this.id, addr: this.link.address }, "refused: address locked out");
    // Both name the wait, so a client comes back when it can instead of giving up or hammering.
    const wait = retryAfter(locked);
    this.error("rate_limited", `Too many failed hellos from this address; ${wait}`, requestId);
    this.close(CLOSE_CODES.lockedOut, `locked out; ${wait}`);
    return true;
  }

  /**
   * The first frame: anything but a valid hello with the right secret (or an extension's credential,
   * e.g. a `devices` pairing code) and version closes the connection.
   */
  #hello(msg: ClientMessage | undefined, bad: DecodeError | undefined): void {
    const { lockout, authenticate } = this.deps.settings;
    const log = this.#log;
    const addr = this.link.address;
    if (this.#refuseIfLocked(msg?.request_id ?? bad?.request_id)) return;
    if (msg?.type !== "hello") {
      log.debug({ conn: this.id, type: msg?.type }, "rejected: first frame is not a valid hello");
      // The spec's hello failures are unauthorized/version_mismatch/auth_timeout; a malformed hello
      // (e.g. bad features) stays unauthorized, and the message names the field (never a value).
      const why = bad
        ? `The first frame must be a valid hello (${bad.message})`
        : "The first frame must be hello";
      this.error("unauthorized", why, msg?.request_id ?? bad?.request_id);
      this.close(CLOSE_CODES.unauthorized, "unauthorized");
      return;
    }
    const credential = this.deps.extensions.find((e) => e.credential?.presented(msg))?.credential;
    if (credential) {
      this.#redeem(msg, credential);
      return;
    }
    const principal = msg.secret === undefined ? undefined : authenticate(msg.secret);
    if (!principal) {
      const locked = lockout.fail(addr);
      log.warn({ conn: this.id, addr, locked }, "rejected: wrong secret");
      this.error("unauthorized", "Invalid secret", msg.request_id);
      this.close(CLOSE_CODES.unauthorized, "unauthorized");
      return;
    }
    if (this.#refuseVersion(msg)) return;
    this.#ready(msg, principal);
  }

  /**
   * A hello with an extension's credential (a `devices` pairing code): the version is checked first,
   * so a wrong one does not spend it. A refused one counts towards the lockout like a wrong secret.
   */
  #redeem(msg: ClientMessageOf<"hello">, credential: HelloCredential): void {
    if (this.#refuseVersion(msg)) return;
    const redeemed = credential.redeem(msg);
    if ("refused" in redeemed) {
      const locked = this.deps.settings.lockout.fail(this.link.address);
      this.#log.warn({ conn: this.id, addr: this.link.address, locked }, `rejected: ${redeemed.refused}`);
      this.error("unauthorized", redeemed.refused, msg.request_id);
      this.close(CLOSE_CODES.unauthorized, "unauthorized");
      return;
    }
    this.#ready(msg, redeemed.principal, redeemed.ready);
  }

  /** A wrong `protocol_version` gets `version_mismatch`, counts towards the lockout and closes. */
  #refuseVersion(msg: ClientMessageOf<"hello">): boolean {
    if (msg.protocol_version === PROTOCOL_VERSION) return false;
    const locked = this.deps.settings.lockout.fail(this.link.address);
    this.#log.warn({ conn: this.id, version: msg.protocol_version, locked }, "rejected: protocol version");
    this.error(
      "version_mismatch",
      `Unsupported protocol_version; this server speaks ${PROTOCOL_VERSION}`,
      msg.request_id,
    );
    this.close(CLOSE_CODES.versionMismatch, "version mismatch");
    return true;
  }

  /**
   * Authenticated: register with the Fanout and send `ready` (with the fields the enabled extensions
   * add, then those of the credential, e.g. `device` after a pairing), then the extensions' first frames.
   */
  #ready(
    msg: ClientMessageOf<"hello">,
    principal: Principal,
    credentialFields?: Readonly<Record<string, unknown>>,
  ): void {
    this.deps.settings.lockout.succeed(this.link.address);
    this.principal = principal;
    const features = msg.features === undefined ? undefined : negotiate(msg.features, this.deps.features);
    this.features = new Set(features);
    // An idle connection should not keep its auth timer (and its closure) alive for 10 s.
    clearTimeout(this.#authTimer);
    this.deps.fanout.add(this);
    this.#log.debug({ conn: this.id, ...principalLog(principal) }, "authenticated");
    let extensionFields: Record<string, unknown> = {};
    for (const ext of this.#enabled()) extensionFields = { ...extensionFields, ...ext.ready?.(this) };
    const ready = {
      type: "ready",
      ...(msg.request_id === undefined ? {} : { request_id: msg.request_id }),
      protocol_version: PROTOCOL_VERSION,
      server: this.deps.settings.serverName,
      // Only when asked, so a v1 client's ready stays exactly as before.
      ...(features === undefined ? {} : { features }),
      ...extensionFields,
      ...credentialFields,
      ts: iso(this.deps.ctx.clock.now()),
    } as const;
    this.send(JSON.stringify(ready), { type: ready.type });
    for (const ext of this.#enabled())
      for (const frame of ext.afterReady?.(this) ?? []) this.sendMessage(frame);
  }
}
