import type { ClientMessage, ClientMessageType, ErrorCode } from "@pheby/protocol";
import { ProtocolError } from "../errors.js";
import type { Peer } from "../outbox/outbox.js";
import { chatHandlers } from "./chat.js";
import type { Handler, HandlerTable, Outcome, ServerContext } from "./context.js";
import { conversationHandlers } from "./conversations.js";
import { decisionHandlers } from "./decisions.js";
import { deviceHandlers } from "./devices.js";
import { heartbeatHandlers } from "./heartbeat.js";
import { modelHandlers } from "./models.js";
import { pushHandlers } from "./push.js";
import { scheduleHandlers } from "./schedules.js";
import { yoloHandlers } from "./yolo.js";

/**
 * Every domain's handler table; an extension adds its table here. No feature check is needed: the
 * session decodes each frame with its connection's features, so a request of a feature the peer did
 * not enable is already `unknown_type` (`decodeClientFrame`, `EXTENSION_TYPES` in @pheby/protocol).
 */
export const HANDLER_MODULES: readonly HandlerTable[] = [
  heartbeatHandlers,
  conversationHandlers,
  chatHandlers,
  decisionHandlers,
  yoloHandlers,
  modelHandlers,
  deviceHandlers,
  pushHandlers,
  scheduleHandlers,
];

/** A handler's outcome, or the typed error the requester is told. */
export type Answer = Outcome | { error: { code: ErrorCode; message: string } };

/** Routes decoded requests to their handlers. */
export class Dispatcher {
  readonly #routes = new Map<string, Handler<ClientMessageType>>();

  constructor(tables: readonly HandlerTable[] = HANDLER_MODULES) {
    for (const handlers of tables) {
      for (const [type, handle] of Object.entries(handlers)) {
        this.#routes.set(type, handle as Handler<ClientMessageType>);
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
      const handle = this.#routes.get(msg.type);
      if (!handle) throw new ProtocolError("not_implemented", `${msg.type} is not implemented yet`);
      return await handle(ctx, { peer, msg });
    } catch (err) {
      if (err instanceof ProtocolError) return { error: { code: err.code, message: err.message } };
      ctx.log.error({ err, conn: peer.id, type: msg.type }, "handler failed");
      return { error: { code: "internal_error", message: "Internal server error" } };
    }
  }
}
