import {
  CLOSE_CODES,
  type ClientMessage,
  type ClientMessageOf,
  type DecodeError,
  decodeClientFrame,
  type ErrorCode,
  FEATURE_PUSH,
  LIMITS,
  PROTOCOL_VERSION,
  type RawFrame,
  type ServerMessage,
  type ServerMessageOf,
} from "@pheby/protocol";
import type { Logger } from "pino";
import { type Lockout, retryAfter } from "../auth/lockout.js";
import { type Authenticate, type Principal, principalLog } from "../auth/principal.js";
import type { ServerContext } from "../handlers/context.js";
import type { Dispatcher } from "../handlers/index.js";
import type { Fanout } from "../outbox/fanout.js";
import { type Peer, type SendHint, sendReply } from "../outbox/outbox.js";
import { iso } from "../util/time.js";
import { negotiate, type SERVER_FEATURES } from "./features.js";
import type { PeerLink } from "./link.js";

/** What every connection needs, whatever its transport. */
export interface ConnectionSettings {
  /** Who a hello's secret authenticates (compared in constant time), or undefined. */
  authenticate: Authenticate;
  lockout: Lockout;
  authTimeoutMs: number;
  serverName: string;
  /** The extensions this server offers: {@link SERVER_FEATURES}, less any the operator turned off. */
  features: readonly string[];
}

/** The services connections work with. */
export interface ConnectionDeps {
  /** Handlers' services; `ctx.outbox` receives the broadcasts handlers return. */
  ctx: ServerContext;
  dispatcher: Dispatcher;
  /** The registry of authenticated peers (the Fanout under any outbox wrapper). */
  fanout: Fanout;
  settings: ConnectionSettings;
}

const NO_FEATURES: ReadonlySet<string> = new Set();
const encoder = new TextEncoder();

function frameBytes(data: RawFrame): number {
  return typeof data === "string" ? encoder.encode(data).byteLength : data.byteLength;
}

/** Where transports open a {@link Connection} for each connection they accept. */
export class Connections {
  constructor(private readonly deps: ConnectionDeps) {}

  /**
   * A transport accepted a connection. A locked-out address is refused at
   * once; otherwise the peer has `authTimeoutMs` to say hello.
   */
  open(link: PeerLink): Connection {
    return new Connection(link, this.deps);
  }
}

/**
 * One peer's protocol connection over any {@link PeerLink}: the frame limit,
 * decoding, the handshake (hello/ready, auth timer, lockout), dispatch of
 * requests, and the send path the Fanout uses once it is authenticated.
 */
export class Connection implements Peer {
  readonly id: number;
  features: ReadonlySet<string> = NO_FEATURES;
  principal: Principal | null = null;
  readonly #log: Logger;
  #authTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly link: PeerLink,
    private readonly deps: ConnectionDeps,
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
      features: this.principal ? this.features : this.deps.settings.features,
    });
    if (!this.principal) {
      this.#hello(decoded.ok ? decoded.message : undefined, decoded.ok ? undefined : decoded.error);
      return;
    }
    if (!decoded.ok) {
      const { answers, request_id } = decoded.error;
      // An answer to a stale question is *_not_found whatever else is wrong with it (docs/protocol.md).
      const error = (answers && this.deps.ctx.decisions.staleAnswer(answers)) ?? decoded.error;
      this.#log.debug({ conn: this.id, code: error.code }, "frame rejected");
      this.error(error.code, error.message, request_id);
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

  /** The reply (with the request's `request_id`) goes before the broadcast, as the protocol's tables say. */
  async #dispatch(msg: ClientMessage): Promise<void> {
    const answer = await this.deps.dispatcher.dispatch(this.deps.ctx, this, msg);
    const requestId = msg.request_id;
    if ("error" in answer) {
      this.error(answer.error.code, answer.error.message, requestId);
      return;
    }
    if (answer.reply) {
      // With `resume`, its outbox adds the reply's extension fields (`seq`); without, the v1 reply.
      const { replay } = this.deps.ctx;
      if (replay) replay.reply(this, requestId, answer.reply);
      else sendReply(this, requestId, answer.reply);
    }
    if (answer.broadcast) this.deps.ctx.outbox.publish(answer.broadcast);
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
   * The first frame: anything but a valid hello with the right secret (or, with `devices`, an open
   * pairing code) and version closes the connection.
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
    if (msg.pairing_code !== undefined) {
      this.#pair(msg, msg.pairing_code);
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
   * A pairing hello (`devices`): the version is checked first, so a wrong one does not spend the
   * code. A wrong, used or expired code counts towards the lockout like a wrong secret.
   */
  #pair(msg: ClientMessageOf<"hello">, code: string): void {
    if (this.#refuseVersion(msg)) return;
    const device = this.deps.ctx.devices.pair(code, msg.device_name);
    if (!device) {
      const locked = this.deps.settings.lockout.fail(this.link.address);
      this.#log.warn(
        { conn: this.id, addr: this.link.address, locked },
        "rejected: wrong, used or expired pairing code",
      );
      this.error("unauthorized", "Invalid pairing code (wrong, used or expired)", msg.request_id);
      this.close(CLOSE_CODES.unauthorized, "unauthorized");
      return;
    }
    this.#ready(
      msg,
      { kind: "device", deviceId: device.id },
      { device_id: device.id, device_secret: device.secret },
    );
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

  /** Authenticated: register with the Fanout and send `ready` (with `device` after a pairing). */
  #ready(
    msg: ClientMessageOf<"hello">,
    principal: Principal,
    device?: ServerMessageOf<"ready">["device"],
  ): void {
    this.deps.settings.lockout.succeed(this.link.address);
    this.principal = principal;
    const features =
      msg.features === undefined ? undefined : negotiate(msg.features, this.deps.settings.features);
    this.features = new Set(features);
    // An idle connection should not keep its auth timer (and its closure) alive for 10 s.
    clearTimeout(this.#authTimer);
    this.deps.fanout.add(this);
    this.#log.debug({ conn: this.id, ...principalLog(principal) }, "authenticated");
    this.sendMessage({
      type: "ready",
      ...(msg.request_id === undefined ? {} : { request_id: msg.request_id }),
      protocol_version: PROTOCOL_VERSION,
      server: this.deps.settings.serverName,
      // Only when asked, so a v1 client's ready stays exactly as before.
      ...(features === undefined ? {} : { features }),
      ...(this.features.has(FEATURE_PUSH)
        ? { push: { vapid_public_key: this.deps.ctx.push.vapidPublicKey } }
        : {}),
      ...(device === undefined ? {} : { device }),
      ts: iso(this.deps.ctx.clock.now()),
    });
  }
}
