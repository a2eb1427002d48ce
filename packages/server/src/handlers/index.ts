import {
  type ClientMessage,
  type ClientMessageType,
  type ErrorCode,
  FEATURE_DEVICES,
  FEATURE_SCHEDULES,
} from "@pheby/protocol";
import { ProtocolError } from "../errors.js";
import type { Peer } from "../outbox/outbox.js";
import { chatHandlers } from "./chat.js";
import type { Handler, HandlerModule, Outcome, ServerContext } from "./context.js";
import { conversationHandlers } from "./conversations.js";
import { decisionHandlers } from "./decisions.js";
import { deviceHandlers } from "./devices.js";
import { heartbeatHandlers } from "./heartbeat.js";
import { modelHandlers } from "./models.js";
import { pushHandlers } from "./push.js";
import { scheduleHandlers } from "./schedules.js";
import { yoloHandlers } from "./yolo.js";

/** Every handler module; an extension adds `{ feature: FEATURE_X, handlers: xHandlers }` here. */
export const HANDLER_MODULES: readonly HandlerModule[] = [
  { handlers: heartbeatHandlers },
  { handlers: conversationHandlers },
  { handlers: chatHandlers },
  { handlers: decisionHandlers },
  { handlers: yoloHandlers },
  { handlers: modelHandlers },
  { feature: FEATURE_DEVICES, handlers: deviceHandlers },
  pushHandlers,
  { feature: FEATURE_SCHEDULES, handlers: scheduleHandlers },
];

/** A handler's outcome, or the typed error the requester is told. */
export type Answer = Outcome | { error: { code: ErrorCode; message: string } };

/** The decoder's words for a type it does not know; a gated type a peer did not enable gets the same. */
const UNKNOWN_TYPE = new ProtocolError("unknown_type", "unknown message type");

/** Routes decoded requests to their handlers. */
export class Dispatcher {
  readonly #routes = new Map<string, { feature: string | undefined; handle: Handler<ClientMessageType> }>();

  constructor(modules: readonly HandlerModule[] = HANDLER_MODULES) {
    for (const { feature, handlers } of modules) {
      for (const [type, handle] of Object.entries(handlers)) {
        this.#routes.set(type, { feature, handle: handle as Handler<ClientMessageType> });
      }
    }
  }

  /**
   * Handle one decoded request of an authenticated peer. Typed failures
   * become that error; anything else is logged and answered with a generic
   * `internal_error` (no stack, no path).
   */
  async dispatch(ctx: ServerContext, peer: Peer, msg: ClientMessage): Promise<Answer> {
    try {
      if (msg.type === "hello") throw new ProtocolError("bad_request", "already authenticated");
      const route = this.#routes.get(msg.type);
      if (route?.feature !== undefined && !peer.features.has(route.feature)) throw UNKNOWN_TYPE;
      if (!route) throw new ProtocolError("not_implemented", `${msg.type} is not implemented yet`);
      return await route.handle(ctx, { peer, msg });
    } catch (err) {
      if (err instanceof ProtocolError) return { error: { code: err.code, message: err.message } };
      ctx.log.error({ err, conn: peer.id, type: msg.type }, "handler failed");
      return { error: { code: "internal_error", message: "Internal server error" } };
    }
  }
}
